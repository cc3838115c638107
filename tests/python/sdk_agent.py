"""An A2A agent built from the official a2a-sdk 1.3.0 server classes, for interop tests.

It is a real SDK agent (AgentExecutor + DefaultRequestHandler + InMemoryTaskStore + the SDK's
route factories, served by uvicorn), so the gateway is tested against the reference
implementation's wire behaviour rather than a hand-written imitation.

    python sdk_agent.py --port N [--host 127.0.0.1] [--kind echo|clarify|slow]
                        [--name NAME] [--v03] [--grpc-only] [--duration SECONDS] [--log-level LEVEL]
                        [--extra-skill ID ...] [--unserved-rest]

Endpoints on http://HOST:PORT:
    GET  /.well-known/agent-card.json   the card
    POST /a2a/jsonrpc                   JSON-RPC 2.0 (1.0 methods; with --v03 also the 0.3 ones)
         /a2a/rest/...                  HTTP+JSON (1.0 paths; with --v03 also /a2a/rest/v1/...)

With --grpc-only the agent serves its 1.0 service over gRPC only (the SDK's GrpcHandler on a
grpc.aio server, another port on the same host) and its card, still on HTTP, lists just that
GRPC interface; the JSON-RPC and HTTP+JSON routes are not mounted.

Kinds and their skill ids:
    echo    py-echo     working status, then the input text as artifact "echo", then completed
    clarify py-clarify  first turn: input-required; a follow-up on the same task: completed,
                        with an artifact "answer" holding the follow-up text
    slow    py-slow     working for --duration seconds (default 10) with a status update every
                        second, then artifact "slow" and completed; cancel ends it as canceled

--unserved-rest lists the HTTP+JSON interface on the card without serving it (a card offering a
binding the agent does not serve, for the admission-probe tests).

--extra-skill ID (repeatable) lists further skills on the card, served like the kind's own (a
card claiming another backend's skill, for the registration tests).

Once the server accepts connections it prints exactly one line to stdout,
`READY http://HOST:PORT` (the real port, also with --port 0), and flushes. Logs go to stderr.
SIGTERM / SIGINT shut it down gracefully with exit status 0.

Self-registration (--register ADMIN_URL --register-name NAME --register-key-file PATH): once
serving, the agent registers itself with a gateway (POST ADMIN_URL/admin/v1/registrations with
its base URL and the key from the file in X-API-Key), prints `REGISTERED NAME` to stderr and
repeats the registration as its heartbeat every third of the TTL the gateway answered. On
SIGTERM it drains itself (POST .../registrations/NAME/drain: no new tasks), waits until its own
tasks have finished, leaves (DELETE .../registrations/NAME) and only then stops serving.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx
import uvicorn
from a2a.helpers import get_message_text, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from starlette.applications import Starlette

JSONRPC_PATH = '/a2a/jsonrpc'
REST_PATH = '/a2a/rest'
CARD_PATH = '/.well-known/agent-card.json'

log = logging.getLogger('sdk_agent')

# Ids of the tasks this agent is working on now (a leaving agent waits for them).
RUNNING: set[str] = set()


@dataclass(frozen=True)
class Kind:
    skill_id: str
    skill_name: str
    description: str
    examples: tuple[str, ...]


KINDS = {
    'echo': Kind(
        'py-echo', 'Echo', 'Returns the input text as an artifact named "echo".', ('hello',)
    ),
    'clarify': Kind(
        'py-clarify',
        'Clarify',
        'Asks a clarifying question (input-required), then completes on the follow-up.',
        ('book a table',),
    ),
    'slow': Kind(
        'py-slow',
        'Slow',
        'Works for a while, one status update per second; can be canceled.',
        ('take your time',),
    ),
}


class BaseExecutor(AgentExecutor):
    """Common start/cancel handling; subclasses implement `run`."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            task_id, context_id = task.id, task.context_id
        else:
            task_id, context_id = context.current_task.id, context.current_task.context_id
        updater = TaskUpdater(event_queue, task_id, context_id)
        RUNNING.add(task_id)
        try:
            await self.run(context, updater)
        finally:
            RUNNING.discard(task_id)

    async def run(self, context: RequestContext, updater: TaskUpdater) -> None:
        raise NotImplementedError

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The framework awaits this before cancelling execute(), so the CANCELED status still
        # reaches the open event queue (and any open stream).
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([new_text_part('canceled on request')]))


class EchoExecutor(BaseExecutor):
    async def run(self, context: RequestContext, updater: TaskUpdater) -> None:
        text = get_message_text(context.message)
        await updater.start_work(updater.new_agent_message([new_text_part('echoing')]))
        await updater.add_artifact([new_text_part(text)], name='echo', last_chunk=True)
        await updater.complete()


class ClarifyExecutor(BaseExecutor):
    async def run(self, context: RequestContext, updater: TaskUpdater) -> None:
        current = context.current_task
        if current is None or current.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            question = 'Which detail should I use? Reply on this task to continue.'
            await updater.requires_input(updater.new_agent_message([new_text_part(question)]))
            return
        answer = get_message_text(context.message)
        await updater.start_work(updater.new_agent_message([new_text_part('thanks, finishing')]))
        await updater.add_artifact([new_text_part(answer)], name='answer', last_chunk=True)
        await updater.complete(updater.new_agent_message([new_text_part(f'done with: {answer}')]))


class SlowExecutor(BaseExecutor):
    def __init__(self, duration: float) -> None:
        self.duration = duration

    async def run(self, context: RequestContext, updater: TaskUpdater) -> None:
        steps = max(1, round(self.duration))
        await updater.start_work(updater.new_agent_message([new_text_part(f'step 0/{steps}')]))
        for step in range(1, steps + 1):
            await asyncio.sleep(self.duration / steps)
            await updater.update_status(
                TaskState.TASK_STATE_WORKING,
                updater.new_agent_message([new_text_part(f'step {step}/{steps}')]),
            )
        await updater.add_artifact(
            [new_text_part(f'finished after {steps} steps')], name='slow', last_chunk=True
        )
        await updater.complete()


def build_card(
    kind: str,
    name: str,
    base_url: str,
    v03: bool,
    grpc_url: str | None = None,
    extra_skills: tuple[str, ...] = (),
) -> AgentCard:
    spec = KINDS[kind]
    jsonrpc_url, rest_url = f'{base_url}{JSONRPC_PATH}', f'{base_url}{REST_PATH}'
    # 1.0 first: SDK clients take the first interface of a binding they support, and prefer
    # 1.0 among interfaces of the same binding anyway.
    interfaces = [
        AgentInterface(
            url=jsonrpc_url, protocol_binding=TransportProtocol.JSONRPC, protocol_version='1.0'
        ),
        AgentInterface(
            url=rest_url, protocol_binding=TransportProtocol.HTTP_JSON, protocol_version='1.0'
        ),
    ]
    if grpc_url is not None:
        interfaces = [
            AgentInterface(
                url=grpc_url, protocol_binding=TransportProtocol.GRPC, protocol_version='1.0'
            )
        ]
    elif v03:
        interfaces += [
            AgentInterface(
                url=jsonrpc_url, protocol_binding=TransportProtocol.JSONRPC, protocol_version='0.3'
            ),
            AgentInterface(
                url=rest_url, protocol_binding=TransportProtocol.HTTP_JSON, protocol_version='0.3'
            ),
        ]
    return AgentCard(
        name=name,
        description=spec.description,
        version='1.0.0',
        supported_interfaces=interfaces,
        provider=AgentProvider(organization='a2a-gateway interop tests', url='http://127.0.0.1/'),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[
            AgentSkill(
                id=spec.skill_id,
                name=spec.skill_name,
                description=spec.description,
                tags=['test', kind],
                examples=list(spec.examples),
            )
        ]
        + [
            AgentSkill(id=extra, name=extra, description=spec.description, tags=['test', kind])
            for extra in extra_skills
        ],
    )


def build_app(
    card: AgentCard,
    handler: DefaultRequestHandler,
    v03: bool,
    grpc_only: bool,
    serve_rest: bool = True,
) -> Starlette:

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        # Force-closes still-running tasks (e.g. a slow one) so shutdown does not hang.
        await handler.aclose()

    routes = [*create_agent_card_routes(card, card_url=CARD_PATH)]
    if not grpc_only:
        routes += [*create_jsonrpc_routes(handler, JSONRPC_PATH, enable_v0_3_compat=v03)]
        if serve_rest:
            routes += [*create_rest_routes(handler, enable_v0_3_compat=v03, path_prefix=REST_PATH)]
    return Starlette(routes=routes, lifespan=lifespan)


def make_executor(kind: str, duration: float) -> AgentExecutor:
    if kind == 'echo':
        return EchoExecutor()
    if kind == 'clarify':
        return ClarifyExecutor()
    return SlowExecutor(duration)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    p.add_argument('--port', type=int, required=True, help='TCP port; 0 picks a free one')
    p.add_argument('--host', default='127.0.0.1', help='bind address (default 127.0.0.1)')
    p.add_argument('--kind', choices=sorted(KINDS), default='echo')
    p.add_argument('--name', help='card name (default "Python SDK <kind> agent")')
    p.add_argument(
        '--v03', action='store_true', help='also serve and advertise A2A 0.3 (SDK compat)'
    )
    p.add_argument(
        '--grpc-only', action='store_true', help='serve 1.0 over gRPC only (card still on HTTP)'
    )
    p.add_argument(
        '--duration', type=float, default=10.0, help='slow kind: seconds of work (default 10)'
    )
    p.add_argument('--log-level', default='warning', help='uvicorn/SDK log level (default warning)')
    p.add_argument(
        '--extra-skill', action='append', default=[], help='another skill id for the card'
    )
    p.add_argument(
        '--unserved-rest', action='store_true', help='list HTTP+JSON on the card, do not serve it'
    )
    p.add_argument('--tls-cert', help='serve HTTPS (and TLS gRPC) with this PEM certificate')
    p.add_argument('--tls-key', help='the PEM key of --tls-cert')
    p.add_argument(
        '--tls-client-ca', help='require client certificates issued by this PEM CA (mutual TLS)'
    )
    p.add_argument('--register', metavar='ADMIN_URL', help="a gateway's admin listener to join")
    p.add_argument('--register-name', help='the backend name to register as')
    p.add_argument('--register-key-file', help='file holding the registration key')
    args = p.parse_args(argv)
    if args.register and not (args.register_name and args.register_key_file):
        p.error('--register needs --register-name and --register-key-file')
    return args


class Registration:
    """This agent's membership of a gateway's fleet (see the module doc)."""

    def __init__(self, args: argparse.Namespace, base_url: str) -> None:
        with open(args.register_key_file, encoding='utf-8') as f:
            key = f.read().strip()
        self.url = f'{args.register.rstrip("/")}/admin/v1/registrations'
        self.name = args.register_name
        self.body = {'name': self.name, 'url': base_url}
        self.http = httpx.AsyncClient(headers={'X-API-Key': key}, timeout=10.0)

    async def join(self) -> float:
        """Registers (or heartbeats); the heartbeat TTL in seconds."""
        response = await self.http.post(self.url, json=self.body)
        if response.status_code not in (200, 201):
            raise SystemExit(f'sdk_agent: registration refused: {response.status_code} {response.text}')
        return response.json()['heartbeat_ttl_ms'] / 1000

    async def heartbeats(self, ttl: float) -> None:
        while True:
            await asyncio.sleep(ttl / 3)
            with contextlib.suppress(httpx.HTTPError):
                await self.http.post(self.url, json=self.body)

    async def leave(self, busy: Callable[[], int]) -> None:
        """Drain, let this agent's tasks finish, then leave the fleet."""
        response = await self.http.post(f'{self.url}/{self.name}/drain')
        print(f'DRAINING {self.name} {response.status_code}', file=sys.stderr, flush=True)
        while busy() > 0:
            await asyncio.sleep(0.1)
        response = await self.http.delete(f'{self.url}/{self.name}')
        print(f'LEFT {self.name} {response.status_code}', file=sys.stderr, flush=True)
        await self.http.aclose()


async def serve(args: argparse.Namespace) -> None:
    # Bind ourselves so --port 0 works and the card can carry the real port.
    family = socket.AF_INET6 if ':' in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    url_host = f'[{args.host}]' if family == socket.AF_INET6 else args.host
    scheme = 'https' if args.tls_cert else 'http'
    base_url = f'{scheme}://{url_host}:{port}'

    name = args.name or f'Python SDK {args.kind} agent'
    grpc_server = None
    grpc_url = None
    if args.grpc_only:
        import grpc  # the a2a-sdk[grpc] extra
        from a2a.server.request_handlers.grpc_handler import GrpcHandler
        from a2a.types import a2a_pb2_grpc

        grpc_server = grpc.aio.server()
        if args.tls_cert:
            credentials = grpc.ssl_server_credentials(
                [(open(args.tls_key, 'rb').read(), open(args.tls_cert, 'rb').read())],
                root_certificates=open(args.tls_client_ca, 'rb').read()
                if args.tls_client_ca
                else None,
                require_client_auth=bool(args.tls_client_ca),
            )
            grpc_port = grpc_server.add_secure_port(f'{url_host}:0', credentials)
            grpc_url = f'https://{url_host}:{grpc_port}'
        else:
            grpc_port = grpc_server.add_insecure_port(f'{url_host}:0')
            grpc_url = f'{url_host}:{grpc_port}'  # a gRPC target, as the SDK's own examples publish it
    card = build_card(args.kind, name, base_url, args.v03, grpc_url, tuple(args.extra_skill))
    handler = DefaultRequestHandler(
        agent_executor=make_executor(args.kind, args.duration),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    if grpc_server is not None:
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
        await grpc_server.start()
    app = build_app(card, handler, args.v03, args.grpc_only, not args.unserved_rest)
    config = uvicorn.Config(
        app,
        log_level=args.log_level,
        access_log=args.log_level in ('debug', 'info'),
        timeout_graceful_shutdown=3,
        lifespan='on',
        ssl_certfile=args.tls_cert,
        ssl_keyfile=args.tls_key,
        ssl_ca_certs=args.tls_client_ca,
        ssl_cert_reqs=ssl.CERT_REQUIRED if args.tls_client_ca else ssl.CERT_NONE,
    )
    server = uvicorn.Server(config)

    # uvicorn re-raises the captured SIGTERM after its graceful shutdown; with a Python handler
    # in place (restored by uvicorn) that re-raise is harmless and we exit 0.
    registration = Registration(args, base_url) if args.register else None
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()

    def _on_signal(_sig: int, _frame: object) -> None:
        if registration is None:
            server.should_exit = True
        else:
            # Leave the fleet first: the server keeps serving until the gateway sends no more.
            loop.call_soon_threadsafe(stopping.set)

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    if registration is not None:
        # uvicorn installs its own handler (this method) while it serves; a registered agent
        # must leave the fleet before it stops serving.
        server.handle_exit = _on_signal  # type: ignore[method-assign]

    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving  # startup failed: propagate the error
            raise SystemExit('sdk_agent: server stopped during startup')
        await asyncio.sleep(0.01)
    print(f'READY {base_url}', flush=True)
    log.info('%s (%s, skill %s) on %s', name, args.kind, KINDS[args.kind].skill_id, base_url)
    if registration is not None:
        ttl = await registration.join()
        print(f'REGISTERED {registration.name}', file=sys.stderr, flush=True)
        heartbeats = asyncio.create_task(registration.heartbeats(ttl))
        await stopping.wait()
        heartbeats.cancel()
        await registration.leave(lambda: len(RUNNING))
        server.should_exit = True
    try:
        await serving
    finally:
        if grpc_server is not None:
            await grpc_server.stop(1)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    asyncio.run(serve(args))
    return 0


if __name__ == '__main__':
    sys.exit(main())
