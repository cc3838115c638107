"""Drives A2A flows through the official a2a-sdk 1.3.0 client API, for interop tests.

Only the SDK's public client API is used (A2ACardResolver, ClientFactory, ClientConfig, Client),
unmodified, so whatever this script sees is what a stock SDK client sees.

    python sdk_client.py --base URL --binding jsonrpc|rest
                         --flow card|extended|send|stream|get|cancel|multiturn|push|data|ambiguous|context|get-unknown|all
                         (repeatable; data: a diff in a data part, ambiguous: a text that fits
                         several skills, expecting a rejected task listing them; context: two
                         messages in the client's own --context-id, then ListTasks by it; get-unknown:
                         GetTask of a missing task raises TaskNotFoundError)
                         [--skill-id ID] [--echo-skill echo] [--clarify-skill clarify]
                         [--slow-skill slow] [--no-skill-metadata]
                         [--protocol-version any|1.0|0.3] [--cancel-mode both|immediate|stream]
                         [--push-url URL] [--push-token TOKEN] [--bearer TOKEN] [--header 'Name: value']... [--text TEXT]
                         [--ca CA.pem [--cert CLIENT.pem --key CLIENT.key]]
                         [--timeout 30] [--flow-timeout 90] [--trace]

--base is what the card resolver gets: it GETs {base}/.well-known/agent-card.json (a gateway's
per-agent base, or its root). --binding restricts the client to that one binding
(supported_protocol_bindings), so each binding is really exercised; --protocol-version further
keeps only the card's interfaces of that protocol version (0.3 selects the SDK's compat transports).

Every Message carries metadata {"skillId": <skill>} (the gateway's unified endpoint routes by it):
--skill-id sets it for every flow, otherwise each flow uses its --*-skill option. Against a single
agent the metadata is harmless; --no-skill-metadata leaves it out.

The flows themselves live in sdk_flows.py (beside this file).

Output: one JSON line per flow on stdout, {"flow": ..., "ok": true|false, "detail": {...}}; a
failure puts the reason in detail.error. Exit status 0 only when every requested flow is ok.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
import time
from typing import Any

import httpx

from sdk_flows import BINDINGS, FLOW_FUNCS, FLOWS, CheckError, Session


async def run_flow(name: str, s: Session) -> bool:
    detail: dict[str, Any] = {'binding': s.binding}
    skill = s.skill(
        {
            'cancel': s.args.slow_skill,
            'push': s.args.slow_skill,
            'multiturn': s.args.clarify_skill,
            'data': s.args.review_skill,
        }.get(name, s.args.echo_skill)
    )
    if name not in ('card', 'extended'):
        detail['skill'] = skill
    started = time.monotonic()
    ok = False
    try:
        async with asyncio.timeout(s.args.flow_timeout):
            await FLOW_FUNCS[name](s, detail)
        ok = True
    except CheckError as e:
        detail['error'] = str(e)
    except TimeoutError:
        detail['error'] = f'flow did not finish within {s.args.flow_timeout}s'
    except Exception as e:  # noqa: BLE001 - every failure must become an ok:false line
        detail['error'] = f'{type(e).__name__}: {e}'
        if e.__cause__ is not None:
            detail['cause'] = f'{type(e.__cause__).__name__}: {e.__cause__}'
    detail['elapsed_s'] = round(time.monotonic() - started, 3)
    print(json.dumps({'flow': name, 'ok': ok, 'detail': detail}, default=str), flush=True)
    return ok


def parse_header(value: str) -> tuple[str, str]:
    name, sep, val = value.partition(':')
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f'expected "Name: value", got {value!r}')
    return name.strip(), val.strip()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    p.add_argument('--base', required=True, help='base URL given to the card resolver')
    p.add_argument('--binding', required=True, choices=sorted(BINDINGS))
    p.add_argument(
        '--flow',
        action='append',
        required=True,
        choices=[*FLOWS, 'extended', 'push', 'data', 'ambiguous', 'context', 'get-unknown', 'all'],
        help='flow to run; repeatable; "all" runs every flow in order',
    )
    p.add_argument(
        '--skill-id', help='skillId metadata for every flow (overrides the --*-skill options)'
    )
    p.add_argument('--echo-skill', default='echo', help='skill for send/stream/get (default echo)')
    p.add_argument(
        '--clarify-skill', default='clarify', help='skill for multiturn (default clarify)'
    )
    p.add_argument('--slow-skill', default='slow', help='skill for cancel (default slow)')
    p.add_argument('--review-skill', default='review-pr', help='skill for data (default review-pr)')
    p.add_argument(
        '--ambiguous-text',
        default='lorem ipsum',
        help='ambiguous flow: a text that fits no skill better than another',
    )
    p.add_argument('--context-id', default='', help='context flow: the contextId the client chooses')
    p.add_argument('--no-skill-metadata', action='store_true', help='send no skillId metadata')
    p.add_argument(
        '--protocol-version',
        choices=['any', '1.0', '0.3'],
        default='any',
        help='use only card interfaces of this A2A version (default: the factory picks)',
    )
    p.add_argument(
        '--cancel-mode',
        choices=['both', 'immediate', 'stream'],
        default='both',
        help='cancel after a returnImmediately send, during a stream, or both (default)',
    )
    p.add_argument('--push-url', help='push flow: the webhook to register')
    p.add_argument('--push-token', default='', help='push flow: the token deliveries carry')
    p.add_argument('--bearer', help='send Authorization: Bearer TOKEN on every request')
    p.add_argument(
        '--header',
        action='append',
        type=parse_header,
        default=[],
        help='extra request header "Name: value"; repeatable',
    )
    p.add_argument('--ca', help='PEM file of the CA the server certificate must chain to (TLS)')
    p.add_argument('--cert', help='PEM file of a client certificate (mutual TLS; with --key)')
    p.add_argument('--key', help='PEM file of the client certificate\'s private key')
    p.add_argument('--text', default='hello from the a2a-sdk client', help='input text prefix')
    p.add_argument(
        '--timeout', type=float, default=30.0, help='httpx timeout in seconds (default 30)'
    )
    p.add_argument(
        '--trace', action='store_true', help='log every HTTP request/response line to stderr'
    )
    p.add_argument(
        '--flow-timeout', type=float, default=90.0, help='limit per flow in seconds (default 90)'
    )
    args = p.parse_args(argv)
    args.flows = list(FLOWS) if 'all' in args.flow else list(dict.fromkeys(args.flow))
    return args


async def _trace_request(request: httpx.Request) -> None:
    print(
        f'> {request.method} {request.url} A2A-Version={request.headers.get("a2a-version")}',
        file=sys.stderr,
        flush=True,
    )


async def _trace_response(response: httpx.Response) -> None:
    print(
        f'< {response.status_code} {response.headers.get("content-type")} {response.request.url}',
        file=sys.stderr,
        flush=True,
    )


async def main_async(args: argparse.Namespace) -> int:
    headers = dict(args.header)
    if args.bearer:
        headers['Authorization'] = f'Bearer {args.bearer}'
    # The SDK's own httpx client keeps httpx's 5 s default timeout, too short for slow flows.
    hooks = {'request': [_trace_request], 'response': [_trace_response]} if args.trace else {}
    verify: Any = True
    if args.ca:
        # Only this CA: the system's roots must not vouch for a test server.
        verify = ssl.create_default_context(cafile=args.ca)
        if args.cert:
            verify.load_cert_chain(args.cert, args.key)
    async with httpx.AsyncClient(
        timeout=args.timeout, headers=headers, event_hooks=hooks, verify=verify
    ) as http:
        session = Session(args, http)
        results = [await run_flow(name, session) for name in args.flows]
    return 0 if all(results) else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return asyncio.run(main_async(args))
    except Exception as e:  # noqa: BLE001 - report, never a traceback instead of JSON
        print(
            json.dumps(
                {'flow': 'setup', 'ok': False, 'detail': {'error': f'{type(e).__name__}: {e}'}}
            ),
            flush=True,
        )
        return 1


if __name__ == '__main__':
    sys.exit(main())
