"""The official a2a-sdk 0.3 over its HTTP+JSON (REST) transport, for interop tests.

Runs in tests/.venv03 (a2a-sdk 0.3, made by ../setup-python.sh): the 1.x SDK of tests/.venv no
longer has the 0.3 REST transport. Only the SDK's public API is used, unmodified.

    python sdk03_rest.py client --base URL --flow FLOW (repeatable) [--bearer TOKEN]
                                [--skill-id ID] [--slow-skill ID] [--timeout 30]
    python sdk03_rest.py agent --port N [--host 127.0.0.1] [--kind echo|slow] [--duration 30]

client: resolves the card at {base}/.well-known/agent-card.json and builds its client with
ClientFactory, supported transports [HTTP+JSON] only, so every call goes over the 0.3 REST
transport (`/v1/message:send`, ...). Flows: send (unary), stream, get (send, then GetTask),
cancel (stream a task of --slow-skill, cancel it, expect canceled), auth-card (the card names its
authentication in 0.3 form), get-unknown (404), cancel-completed (409), nonblocking (a --slow-skill
task answered at once, not done), subscribe (a running --slow-skill task, streamed to its end),
subscribe-ended (resubscribing to an ended task is a stream that ends; the SDK's own server drops the
connection instead). One JSON line per flow,
{"flow", "ok", "detail"}; exit status 0 only when every flow is ok.

agent: an SDK 0.3 agent served by the SDK's REST app only (A2ARESTFastAPIApplication); its card
names HTTP+JSON as its one transport. Kinds: echo (skill py03-echo: working, artifact "echo" with
the input text, completed), slow (skill py03-slow: working for --duration seconds, cancelable).
Prints `READY http://HOST:PORT` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
import uuid
from typing import Any

import httpx


def text_message(text: str, skill: str | None, task_id: str | None = None) -> Any:
    from a2a.types import Message, Part, Role, TextPart

    return Message(
        role=Role.user,
        message_id=str(uuid.uuid4()),
        parts=[Part(root=TextPart(text=text))],
        task_id=task_id,
        metadata={'skillId': skill} if skill else None,
    )


class CheckError(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise CheckError(what)


async def make_client(args: argparse.Namespace, http: httpx.AsyncClient, streaming: bool) -> Any:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.client.transports.rest import RestTransport
    from a2a.types import TransportProtocol

    card = await A2ACardResolver(http, args.base).get_agent_card()
    config = ClientConfig(
        httpx_client=http, supported_transports=[TransportProtocol.http_json], streaming=streaming
    )
    client = ClientFactory(config).create(card)
    check(isinstance(client._transport, RestTransport), f'not the REST transport: {client._transport}')
    return client


async def collect(client: Any, message: Any) -> list[Any]:
    """Every event of one send: (task, update) pairs or a Message."""
    return [event async for event in client.send_message(message)]


def last_task(events: list[Any]) -> Any:
    tasks = [e[0] for e in events if isinstance(e, tuple)]
    check(bool(tasks), f'no task in the answer: {events!r}')
    return tasks[-1]


def artifact_text(task: Any) -> str:
    texts = []
    for artifact in task.artifacts or []:
        for part in artifact.parts:
            if getattr(part.root, 'text', None) is not None:
                texts.append(part.root.text)
    return ''.join(texts)


async def flow_send(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    client = await make_client(args, http, streaming=False)
    text = f'hello over 0.3 REST {uuid.uuid4().hex[:6]}'
    task = last_task(await collect(client, text_message(text, args.skill_id)))
    detail.update(task_id=task.id, state=task.status.state.value)
    check(task.status.state.value == 'completed', f'state {task.status.state.value}')
    check(text in artifact_text(task), f'artifact {artifact_text(task)!r} lacks the input')


async def flow_stream(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    from a2a.types import TaskStatusUpdateEvent

    client = await make_client(args, http, streaming=True)
    text = f'streamed over 0.3 REST {uuid.uuid4().hex[:6]}'
    events = await collect(client, text_message(text, args.skill_id))
    updates = [e[1] for e in events if isinstance(e, tuple) and e[1] is not None]
    detail['events'] = len(events)
    task = last_task(events)
    check(task.status.state.value == 'completed', f'final state {task.status.state.value}')
    check(any(isinstance(u, TaskStatusUpdateEvent) for u in updates), 'no status update streamed')
    check(text in artifact_text(task), 'the streamed artifact lacks the input')


async def flow_get(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    from a2a.types import TaskQueryParams

    client = await make_client(args, http, streaming=False)
    task = last_task(await collect(client, text_message('remember me', args.skill_id)))
    got = await client.get_task(TaskQueryParams(id=task.id, history_length=5))
    detail.update(task_id=task.id, state=got.status.state.value)
    check(got.id == task.id, f'GetTask answered task {got.id}')
    check(got.status.state.value == 'completed', f'state {got.status.state.value}')


async def flow_cancel(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    from a2a.types import TaskIdParams, TaskQueryParams

    client = await make_client(args, http, streaming=True)
    stream = client.send_message(text_message('take your time', args.slow_skill))
    task_id = None
    async for event in stream:
        if isinstance(event, tuple):
            task_id = event[0].id
            break
    await stream.aclose()
    check(task_id is not None, 'the stream named no task')
    canceled = await client.cancel_task(TaskIdParams(id=task_id))
    detail.update(task_id=task_id, state=canceled.status.state.value)
    check(canceled.status.state.value == 'canceled', f'state after cancel {canceled.status.state.value}')
    got = await client.get_task(TaskQueryParams(id=task_id))
    check(got.status.state.value == 'canceled', f'GetTask after cancel: {got.status.state.value}')


async def flow_auth_card(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    """The card as the 0.3 client reads it names how to authenticate: 0.3 `{type, ...}` schemes and
    a `security` list (without them a 0.3 client reads "no authentication required")."""
    from a2a.client import A2ACardResolver

    card = await A2ACardResolver(http, args.base).get_agent_card()
    schemes = {name: scheme.root.type for name, scheme in (card.security_schemes or {}).items()}
    detail.update(schemes=schemes, security=card.security)
    check(bool(schemes), 'the card names no security scheme')
    check(all(kind in {'apiKey', 'http', 'oauth2', 'openIdConnect', 'mutualTLS'} for kind in schemes.values()), f'schemes {schemes}')
    check(bool(card.security), 'the card has no security requirements')


async def expect_http_error(call: Any, detail: dict) -> int:
    """The HTTP status of the A2AClientHTTPError that `call` raises (the 0.3 client's only error)."""
    from a2a.client.errors import A2AClientHTTPError

    try:
        await call
    except A2AClientHTTPError as e:
        detail.update(status=e.status_code, error=str(e)[:200])
        return e.status_code
    raise CheckError('the call succeeded; want an error')


async def flow_get_unknown(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    from a2a.types import TaskQueryParams

    client = await make_client(args, http, streaming=False)
    status = await expect_http_error(client.get_task(TaskQueryParams(id=f'no-such-{uuid.uuid4()}')), detail)
    check(status == 404, f'status {status}, want 404 (task not found)')


async def flow_cancel_completed(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    from a2a.types import TaskIdParams

    client = await make_client(args, http, streaming=False)
    task = last_task(await collect(client, text_message('done soon', args.skill_id)))
    check(task.status.state.value == 'completed', f'state {task.status.state.value}')
    status = await expect_http_error(client.cancel_task(TaskIdParams(id=task.id)), detail)
    check(status == 409, f'status {status}, want 409 (task not cancelable)')


async def flow_nonblocking(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    """A non-blocking send (`configuration.blocking: false`, the client's polling mode) of a slow
    task answers at once with the task not yet done."""
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import TransportProtocol

    card = await A2ACardResolver(http, args.base).get_agent_card()
    config = ClientConfig(httpx_client=http, supported_transports=[TransportProtocol.http_json], streaming=False, polling=True)
    client = ClientFactory(config).create(card)
    started = time.monotonic()
    task = last_task(await collect(client, text_message('take your time', args.slow_skill)))
    took = time.monotonic() - started
    detail.update(task_id=task.id, state=task.status.state.value, seconds=round(took, 3))
    check(task.status.state.value in ('submitted', 'working'), f'state {task.status.state.value}, want not yet done')
    check(took < 5, f'answered after {took:.1f}s; want at once')


async def flow_subscribe(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    """Subscribing to a running task (--slow-skill, sent non-blocking) streams it to its end."""
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import TaskIdParams, TaskStatusUpdateEvent, TransportProtocol

    card = await A2ACardResolver(http, args.base).get_agent_card()
    config = ClientConfig(httpx_client=http, supported_transports=[TransportProtocol.http_json], streaming=True, polling=True)
    sender = ClientFactory(ClientConfig(httpx_client=http, supported_transports=[TransportProtocol.http_json], streaming=False, polling=True)).create(card)
    task = last_task(await collect(sender, text_message('watch me', args.slow_skill)))
    client = ClientFactory(config).create(card)
    events = [event async for event in client.resubscribe(TaskIdParams(id=task.id))]
    updates = [e[1] for e in events if isinstance(e, tuple) and isinstance(e[1], TaskStatusUpdateEvent)]
    detail.update(task_id=task.id, events=len(events), last=updates[-1].status.state.value if updates else None)
    check(bool(updates) and updates[-1].status.state.value == 'completed', f'the subscription did not see the end: {detail}')


async def flow_subscribe_ended(args: argparse.Namespace, http: httpx.AsyncClient, detail: dict) -> None:
    """Subscribing to a task that has ended is a stream that ends (the 0.3 server answers
    `200 text/event-stream` and closes), not an error."""
    from a2a.types import TaskIdParams

    client = await make_client(args, http, streaming=True)
    task = last_task(await collect(client, text_message('over quickly', args.skill_id)))
    check(task.status.state.value == 'completed', f'state {task.status.state.value}')
    events = [event async for event in client.resubscribe(TaskIdParams(id=task.id))]
    detail.update(task_id=task.id, events=len(events))


FLOWS = {
    'send': flow_send,
    'stream': flow_stream,
    'get': flow_get,
    'cancel': flow_cancel,
    'auth-card': flow_auth_card,
    'get-unknown': flow_get_unknown,
    'cancel-completed': flow_cancel_completed,
    'nonblocking': flow_nonblocking,
    'subscribe': flow_subscribe,
    'subscribe-ended': flow_subscribe_ended,
}


async def run_client(args: argparse.Namespace) -> int:
    ok_all = True
    headers = {'Authorization': f'Bearer {args.bearer}'} if args.bearer else None
    async with httpx.AsyncClient(timeout=args.timeout, headers=headers) as http:
        for name in args.flow:
            detail: dict[str, Any] = {}
            started = time.monotonic()
            ok = False
            try:
                async with asyncio.timeout(args.timeout * 3):
                    await FLOWS[name](args, http, detail)
                ok = True
            except CheckError as e:
                detail['error'] = str(e)
            except Exception as e:  # noqa: BLE001 - every failure must become an ok:false line
                detail['error'] = f'{type(e).__name__}: {e}'
            detail['elapsed_s'] = round(time.monotonic() - started, 3)
            print(json.dumps({'flow': name, 'ok': ok, 'detail': detail}, default=str), flush=True)
            ok_all = ok_all and ok
    return 0 if ok_all else 1


def build_agent(args: argparse.Namespace, base_url: str) -> Any:
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.apps import A2ARESTFastAPIApplication
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TaskState, TextPart

    skill_id = f'py03-{args.kind}'

    class Executor(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            if context.current_task is None:
                await updater.submit()
            await updater.start_work()
            if args.kind == 'slow':
                deadline = time.monotonic() + args.duration
                while time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
            text = context.get_user_input()
            await updater.add_artifact([Part(root=TextPart(text=text))], name=args.kind)
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            await updater.update_status(TaskState.canceled, final=True)

    card = AgentCard(
        name=f'Python SDK 0.3 REST {args.kind} agent',
        description=f'a2a-sdk 0.3 agent over HTTP+JSON only ({args.kind})',
        url=base_url,
        version='1.0.0',
        protocol_version='0.3.0',
        preferred_transport='HTTP+JSON',
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id=skill_id, name=skill_id, description=f'{args.kind} over 0.3 REST', tags=['test'])],
    )
    handler = DefaultRequestHandler(agent_executor=Executor(), task_store=InMemoryTaskStore())
    return A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build()


async def run_agent(args: argparse.Namespace) -> int:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    sock.setblocking(False)
    base_url = f'http://{args.host}:{sock.getsockname()[1]}'
    config = uvicorn.Config(build_agent(args, base_url), log_level='warning', timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving
            raise SystemExit('sdk03_rest: server stopped during startup')
        await asyncio.sleep(0.01)
    print(f'READY {base_url}', flush=True)
    await serving
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    sub = p.add_subparsers(dest='role', required=True)
    c = sub.add_parser('client')
    c.add_argument('--base', required=True)
    c.add_argument('--flow', action='append', choices=sorted(FLOWS), required=True)
    c.add_argument('--skill-id', default='echo')
    c.add_argument('--bearer', help='send Authorization: Bearer TOKEN on every request')
    c.add_argument('--slow-skill', default='slow')
    c.add_argument('--timeout', type=float, default=30.0)
    a = sub.add_parser('agent')
    a.add_argument('--port', type=int, default=0)
    a.add_argument('--host', default='127.0.0.1')
    a.add_argument('--kind', choices=['echo', 'slow'], default='echo')
    a.add_argument('--duration', type=float, default=30.0)
    args = p.parse_args(argv)
    return asyncio.run(run_client(args) if args.role == 'client' else run_agent(args))


if __name__ == '__main__':
    sys.exit(main())
