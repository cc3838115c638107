"""The flows sdk_client.py runs, written against the official a2a-sdk 1.3.0 client API only.

Each flow takes a Session and a detail dict it fills as it goes (so a failure still reports how
far it got) and raises CheckError when a check does not hold. See sdk_client.py for the CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text
from google.protobuf import json_format, struct_pb2

from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import TransportProtocol

BINDINGS = {
    'jsonrpc': TransportProtocol.JSONRPC,
    'rest': TransportProtocol.HTTP_JSON,
    'grpc': TransportProtocol.GRPC,
}


def grpc_channel(url: str, headers: dict[str, str], tls: dict[str, bytes] | None = None) -> Any:
    """The SDK's documented channel factory, `grpc.aio.insecure_channel(url)`, given the card's GRPC
    interface URL unchanged (a gRPC target, `HOST:PORT`: a URL the gateway publishes must be dialable
    as it is), sending `headers` (e.g. Authorization) as metadata on every call. Over TLS when `tls`
    is given (its `ca`, and `cert` + `key` for a client certificate): `secure_channel` to the URL's
    host and port (a TLS interface is published with its `https://` scheme)."""
    import grpc  # the a2a-sdk[grpc] extra

    metadata = [(k.lower(), v) for k, v in headers.items()]

    class WithMetadata(
        grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor
    ):
        def _details(self, details: Any) -> Any:
            merged = list(details.metadata or []) + metadata
            return details._replace(metadata=merged)

        async def intercept_unary_unary(self, continuation, details, request):  # noqa: ANN001
            return await continuation(self._details(details), request)

        async def intercept_unary_stream(self, continuation, details, request):  # noqa: ANN001
            return await continuation(self._details(details), request)

    interceptors = [WithMetadata()] if metadata else None
    if tls is not None:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=tls.get('ca'),
            private_key=tls.get('key'),
            certificate_chain=tls.get('cert'),
        )
        target = url.split('://', 1)[-1].rstrip('/')
        return grpc.aio.secure_channel(target, credentials, interceptors=interceptors)
    return grpc.aio.insecure_channel(url, interceptors=interceptors)
FLOWS = ('card', 'send', 'stream', 'get', 'cancel', 'multiturn')
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}
# How long a stream may stay open after CancelTask returned before we call it stuck.
STREAM_CLOSE_GRACE = 10.0


class CheckError(Exception):
    """A check of a flow did not hold; the message says which."""


def state_name(state: int) -> str:
    return TaskState.Name(state)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckError(message)


class Session:
    """Card resolution and client construction shared by the flows."""

    def __init__(self, args: argparse.Namespace, http: httpx.AsyncClient) -> None:
        self.args = args
        self.http = http
        self.binding: str = BINDINGS[args.binding].value
        # Built up front, as create_from_url does: a factory sets the A2A-Version default header
        # on the shared httpx client, so even the first card fetch carries it.
        self.factories = {
            streaming: ClientFactory(
                ClientConfig(
                    streaming=streaming,
                    httpx_client=http,
                    supported_protocol_bindings=[self.binding],
                    grpc_channel_factory=lambda url: grpc_channel(
                        url, self.grpc_metadata(), self.grpc_tls()
                    ),
                )
            )
            for streaming in (False, True)
        }

    def grpc_tls(self) -> dict[str, bytes] | None:
        """The PEM files of --ca / --cert / --key, for a TLS gRPC channel; None without --ca."""
        if not self.args.ca:
            return None
        files = {'ca': self.args.ca, 'cert': self.args.cert, 'key': self.args.key}
        return {name: open(path, 'rb').read() for name, path in files.items() if path}

    def grpc_metadata(self) -> dict[str, str]:
        """What the client sends as HTTP headers, as gRPC metadata (--header, --bearer)."""
        headers = dict(self.args.header)
        if self.args.bearer:
            headers['Authorization'] = f'Bearer {self.args.bearer}'
        return headers

    async def card(self) -> AgentCard:
        card = await A2ACardResolver(self.http, self.args.base).get_agent_card()
        if self.args.protocol_version != 'any':
            want = self.args.protocol_version
            keep = [i for i in card.supported_interfaces if _same_minor(i.protocol_version, want)]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(keep)
        return card

    def client(self, card: AgentCard, streaming: bool) -> Client:
        return self.factories[streaming].create(card)

    def skill(self, flow_skill: str) -> str | None:
        if self.args.no_skill_metadata:
            return None
        return self.args.skill_id or flow_skill

    def message(self, text: str, skill: str | None, task: Task | None = None) -> Message:
        msg = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
        )
        if skill:
            msg.metadata.update({'skillId': skill})
        if task is not None:
            msg.task_id = task.id
            msg.context_id = task.context_id
        return msg


def _same_minor(version: str, want: str) -> bool:
    return version.split('.')[:2] == want.split('.')[:2]


def describe_card(card: AgentCard) -> dict[str, Any]:
    return {
        'name': card.name,
        'skills': [s.id for s in card.skills],
        'streaming': card.capabilities.streaming,
        'interfaces': [
            {
                'binding': i.protocol_binding,
                'url': i.url,
                'version': i.protocol_version,
                **({'tenant': i.tenant} if i.tenant else {}),
            }
            for i in card.supported_interfaces
        ],
    }


_KIND_NAMES = {'status_update': 'statusUpdate', 'artifact_update': 'artifactUpdate'}


def event_kind(event: StreamResponse) -> str:
    """The StreamResponse member that is set, by its 1.0 JSON name."""
    field = event.WhichOneof('payload') or 'empty'
    return _KIND_NAMES.get(field, field)


def only_task(events: list[StreamResponse]) -> Task:
    """The Task of a non-streaming send (the client wraps the response in one StreamResponse)."""
    check(len(events) == 1, f'expected one response, got {len(events)}')
    check(events[0].HasField('task'), f'expected a task, got {event_kind(events[0])}')
    return events[0].task


def artifact_texts(task: Task) -> dict[str, str]:
    return {a.name or a.artifact_id: get_artifact_text(a) for a in task.artifacts}


async def send_blocking(client: Client, message: Message) -> Task:
    return only_task([e async for e in client.send_message(SendMessageRequest(message=message))])


class StreamLog:
    """What a stream delivered, in order."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.states: list[str] = []
        self.artifacts: dict[str, str] = {}
        self.task_id = ''
        self.context_id = ''
        self.final_state: int | None = None

    def add(self, event: StreamResponse) -> None:
        kind = event_kind(event)
        self.kinds.append(kind)
        state = None
        if kind == 'task':
            self.task_id, self.context_id = event.task.id, event.task.context_id
            state = event.task.status.state
            self.artifacts.update(artifact_texts(event.task))
        elif kind == 'statusUpdate':
            self.task_id = self.task_id or event.status_update.task_id
            self.context_id = self.context_id or event.status_update.context_id
            state = event.status_update.status.state
        elif kind == 'artifactUpdate':
            art = event.artifact_update.artifact
            self.task_id = self.task_id or event.artifact_update.task_id
            name = art.name or art.artifact_id
            prior = self.artifacts.get(name, '') if event.artifact_update.append else ''
            self.artifacts[name] = prior + get_artifact_text(art)
        if state is not None:
            self.states.append(state_name(state))
            self.final_state = state

    def detail(self) -> dict[str, Any]:
        return {
            'task_id': self.task_id,
            'events': self.kinds,
            'states': self.states,
            'final_state': state_name(self.final_state) if self.final_state is not None else None,
            'artifacts': self.artifacts,
        }


async def stream_send(client: Client, message: Message) -> StreamLog:
    log = StreamLog()
    async for event in client.send_message(SendMessageRequest(message=message)):
        log.add(event)
    return log


def require_streaming(card: AgentCard) -> None:
    check(
        card.capabilities.streaming,
        'card has capabilities.streaming=false, so the SDK client would not stream',
    )


# --- flows -------------------------------------------------------------------------------------


async def flow_card(s: Session, d: dict[str, Any]) -> None:
    card = await s.card()
    d.update(describe_card(card))
    matching = [i.url for i in card.supported_interfaces if i.protocol_binding == s.binding]
    version = '' if s.args.protocol_version == 'any' else f' of version {s.args.protocol_version}'
    check(bool(matching), f'card lists no {s.binding} interface{version}')
    # The factory must be able to pick a transport for that binding, as a real client would.
    client = s.client(card, streaming=False)
    await client.close()


async def flow_extended(s: Session, d: dict[str, Any]) -> None:
    """Resolves the public card, then asks for the caller's extended card over the binding."""
    card = await s.card()
    d.update(describe_card(card))
    check(card.capabilities.extended_agent_card, 'the card does not offer an extended card')
    client = s.client(card, streaming=False)
    try:
        extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
    finally:
        await client.close()
    d['extended_skills'] = [sk.id for sk in extended.skills]
    d['extended_name'] = extended.name
    check(extended.name == card.name, f'extended card of {extended.name!r}, want {card.name!r}')


async def flow_send(s: Session, d: dict[str, Any]) -> None:
    card = await s.card()
    text = f'{s.args.text} [send {uuid.uuid4().hex[:8]}]'
    client = s.client(card, streaming=False)
    try:
        task = await send_blocking(client, s.message(text, s.skill(s.args.echo_skill)))
    finally:
        await client.close()
    arts = artifact_texts(task)
    d.update(task_id=task.id, state=state_name(task.status.state), artifacts=arts, input=text)
    check(
        task.status.state == TaskState.TASK_STATE_COMPLETED,
        f'state is {d["state"]}, want completed',
    )
    check(text in arts.values(), f'no artifact with the input text; artifacts={arts}')


async def flow_stream(s: Session, d: dict[str, Any]) -> None:
    card = await s.card()
    require_streaming(card)
    text = f'{s.args.text} [stream {uuid.uuid4().hex[:8]}]'
    client = s.client(card, streaming=True)
    try:
        log = await stream_send(client, s.message(text, s.skill(s.args.echo_skill)))
    finally:
        await client.close()
    d.update(log.detail(), input=text)
    check(
        log.final_state == TaskState.TASK_STATE_COMPLETED,
        f'final state {d["final_state"]}, want completed',
    )
    check(
        text in log.artifacts.values(),
        f'no artifact with the input text; artifacts={log.artifacts}',
    )


async def flow_get(s: Session, d: dict[str, Any]) -> None:
    card = await s.card()
    text = f'{s.args.text} [get {uuid.uuid4().hex[:8]}]'
    client = s.client(card, streaming=False)
    try:
        sent = await send_blocking(client, s.message(text, s.skill(s.args.echo_skill)))
        got = await client.get_task(GetTaskRequest(id=sent.id))
    finally:
        await client.close()
    d.update(
        task_id=sent.id,
        sent_state=state_name(sent.status.state),
        got_id=got.id,
        got_state=state_name(got.status.state),
        got_artifacts=artifact_texts(got),
        got_history=len(got.history),
    )
    check(got.id == sent.id, f'GetTask returned id {got.id!r}, want {sent.id!r}')
    check(got.status.state == sent.status.state, 'GetTask state differs from the send result')
    check(got.context_id == sent.context_id, 'GetTask contextId differs from the send result')


async def _cancel_and_confirm(client: Client, task_id: str, d: dict[str, Any]) -> None:
    canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
    d['cancel_state'] = state_name(canceled.status.state)
    check(canceled.id == task_id, f'CancelTask returned id {canceled.id!r}, want {task_id!r}')
    check(
        canceled.status.state == TaskState.TASK_STATE_CANCELED,
        f'CancelTask returned state {d["cancel_state"]}, want canceled',
    )
    after = await client.get_task(GetTaskRequest(id=task_id))
    d['get_state'] = state_name(after.status.state)
    check(
        after.status.state == TaskState.TASK_STATE_CANCELED,
        f'GetTask after cancel says {d["get_state"]}, want canceled',
    )


async def cancel_immediate(s: Session, card: AgentCard, d: dict[str, Any]) -> None:
    """SendMessage with returnImmediately, then CancelTask while the task is still running."""
    client = s.client(card, streaming=False)
    try:
        request = SendMessageRequest(
            message=s.message(f'{s.args.text} [cancel]', s.skill(s.args.slow_skill)),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        task = only_task([e async for e in client.send_message(request)])
        d.update(task_id=task.id, send_state=state_name(task.status.state))
        check(task.status.state not in TERMINAL, f'task already {d["send_state"]} before cancel')
        await _cancel_and_confirm(client, task.id, d)
    finally:
        await client.close()


async def cancel_stream(s: Session, card: AgentCard, d: dict[str, Any]) -> None:
    """Streaming send, CancelTask once the task is working, then watch the stream end."""
    require_streaming(card)
    stream_client = s.client(card, streaming=True)
    unary_client = s.client(card, streaming=False)
    log = StreamLog()
    request = SendMessageRequest(
        message=s.message(f'{s.args.text} [cancel-stream]', s.skill(s.args.slow_skill))
    )
    try:
        async with contextlib.aclosing(stream_client.send_message(request)) as events:
            canceled_at = None
            async for event in events:
                log.add(event)
                if log.final_state in TERMINAL:
                    break
                if canceled_at is None and log.final_state == TaskState.TASK_STATE_WORKING:
                    d['task_id'] = log.task_id
                    await _cancel_and_confirm(unary_client, log.task_id, d)
                    canceled_at = time.monotonic()
                    break
            d['stream'] = log.detail()
            check(canceled_at is not None, 'stream ended before the task was working')
            # The SDK does not promise the CANCELED event reaches the stream; the end of it, yes.
            try:
                async with asyncio.timeout(STREAM_CLOSE_GRACE):
                    async for event in events:
                        log.add(event)
                d['stream_closed'] = True
            except TimeoutError:
                d['stream_closed'] = False
        d['stream_closed_after_s'] = round(time.monotonic() - canceled_at, 3)
        d['stream'] = log.detail()
        d['stream_saw_canceled'] = 'TASK_STATE_CANCELED' in log.states
        check(d['stream_closed'], f'stream still open {STREAM_CLOSE_GRACE}s after CancelTask')
    finally:
        await stream_client.close()
        await unary_client.close()


async def flow_cancel(s: Session, d: dict[str, Any]) -> None:
    card = await s.card()
    modes = ['immediate', 'stream'] if s.args.cancel_mode == 'both' else [s.args.cancel_mode]
    for mode in modes:
        part: dict[str, Any] = {}
        d[mode] = part
        await (cancel_immediate if mode == 'immediate' else cancel_stream)(s, card, part)


async def multiturn_blocking(s: Session, card: AgentCard, d: dict[str, Any]) -> None:
    skill = s.skill(s.args.clarify_skill)
    client = s.client(card, streaming=False)
    try:
        first = await send_blocking(client, s.message(f'{s.args.text} [multiturn]', skill))
        d.update(
            task_id=first.id,
            context_id=first.context_id,
            turn1_state=state_name(first.status.state),
        )
        d['question'] = get_message_text(first.status.message)
        check(
            first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED,
            f'turn 1 state {d["turn1_state"]}, want input-required',
        )
        second = await send_blocking(client, s.message('the answer', skill, task=first))
        d.update(turn2_task_id=second.id, turn2_state=state_name(second.status.state))
        d['artifacts'] = artifact_texts(second)
        check(second.id == first.id, f'turn 2 answered task {second.id!r}, want {first.id!r}')
        check(second.context_id == first.context_id, 'turn 2 changed the contextId')
        check(
            second.status.state == TaskState.TASK_STATE_COMPLETED,
            f'turn 2 state {d["turn2_state"]}, want completed',
        )
    finally:
        await client.close()


async def multiturn_stream(s: Session, card: AgentCard, d: dict[str, Any]) -> None:
    require_streaming(card)
    skill = s.skill(s.args.clarify_skill)
    client = s.client(card, streaming=True)
    try:
        first = await stream_send(client, s.message(f'{s.args.text} [multiturn-stream]', skill))
        d['turn1'] = first.detail()
        check(
            first.final_state == TaskState.TASK_STATE_INPUT_REQUIRED,
            f'turn 1 final state {d["turn1"]["final_state"]}, want input-required',
        )
        task = Task(id=first.task_id, context_id=first.context_id)
        second = await stream_send(client, s.message('the answer', skill, task=task))
        d['turn2'] = second.detail()
        check(
            second.task_id in ('', first.task_id),
            f'turn 2 streamed task {second.task_id!r}, want {first.task_id!r}',
        )
        check(
            second.final_state == TaskState.TASK_STATE_COMPLETED,
            f'turn 2 final state {d["turn2"]["final_state"]}, want completed',
        )
    finally:
        await client.close()


async def flow_multiturn(s: Session, d: dict[str, Any]) -> None:
    card = await s.card()
    part: dict[str, Any] = {}
    d['blocking'] = part
    await multiturn_blocking(s, card, part)
    if card.capabilities.streaming:
        part = {}
        d['stream'] = part
        await multiturn_stream(s, card, part)


async def flow_push(s: Session, d: dict[str, Any]) -> None:
    """A returnImmediately send, then a webhook registered for its task, read back and listed.

    The receiver (the test's) checks the deliveries; this flow only registers."""
    check(bool(s.args.push_url), '--push-url is required for the push flow')
    card = await s.card()
    d['push_capability'] = card.capabilities.push_notifications
    check(card.capabilities.push_notifications, 'the card does not offer push notifications')
    client = s.client(card, streaming=False)
    try:
        request = SendMessageRequest(
            message=s.message(f'{s.args.text} [push]', s.skill(s.args.slow_skill)),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        task = only_task([e async for e in client.send_message(request)])
        d['task_id'] = task.id
        created = await client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task.id, url=s.args.push_url, token=s.args.push_token)
        )
        d['config_id'] = created.id
        check(created.url == s.args.push_url, f'created url {created.url!r}')
        check(bool(created.id), 'the created config has no id')
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
        )
        check(got.url == s.args.push_url, f'got url {got.url!r}')
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        d['listed'] = [c.id for c in listed.configs]
        check(d['listed'] == [created.id], f'listed {d["listed"]}')
    finally:
        await client.close()


DIFF = '--- a/app/config.py\n+++ b/app/config.py\n@@ -1 +1,2 @@\n import os\n+DEBUG = True\n'
DIFF_TITLE = 'Turn on debug'


async def flow_data(s: Session, d: dict[str, Any]) -> None:
    """A message whose only part is a data part holding a diff (no text, no skillId unless the
    caller set one): the gateway must route it to review-pr, whose data artifact reports on it."""
    card = await s.card()
    data = struct_pb2.Value()
    json_format.ParseDict({'diff': DIFF, 'title': DIFF_TITLE}, data)
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(data=data)])
    skill = s.skill(s.args.review_skill)
    if skill:
        msg.metadata.update({'skillId': skill})
    client = s.client(card, streaming=False)
    try:
        task = await send_blocking(client, msg)
    finally:
        await client.close()
    reports = [
        json_format.MessageToDict(p.data)
        for a in task.artifacts
        for p in a.parts
        if p.HasField('data')
    ]
    d.update(task_id=task.id, state=state_name(task.status.state), reports=reports)
    check(
        task.status.state == TaskState.TASK_STATE_COMPLETED,
        f'state is {d["state"]}, want completed',
    )
    # review-pr's report: its findings, and the change named by the title it was given.
    check(
        any('findings' in r and r.get('pr') == DIFF_TITLE for r in reports),
        f'no review report of this diff (not review-pr?); reports={reports}',
    )


async def flow_ambiguous(s: Session, d: dict[str, Any]) -> None:
    """A text message that fits several skills and names none: the SDK client gets a task the
    gateway rejected, whose status message says how to name a skill and lists every candidate
    (text, and a data part {"availableSkills": [{id, description}]})."""
    card = await s.card()
    skills = [sk.id for sk in card.skills]
    d['skills'] = skills
    client = s.client(card, streaming=False)
    try:
        task = await send_blocking(client, s.message(s.args.ambiguous_text, None))
    finally:
        await client.close()
    d.update(task_id=task.id, state=state_name(task.status.state))
    check(task.status.state == TaskState.TASK_STATE_REJECTED, f'state {d["state"]}, want rejected')
    parts = task.status.message.parts
    text = ' '.join(p.text for p in parts if p.HasField('text'))
    listed = [
        item['id']
        for p in parts
        if p.HasField('data')
        for item in json_format.MessageToDict(p.data).get('availableSkills', [])
    ]
    d.update(text=text[:300], listed=listed)
    missing = [sk for sk in skills if sk not in text or sk not in listed]
    check(not missing, f'the rejection does not list {missing}: {text!r} {listed}')
    check('metadata.skillId' in text, f'the rejection does not say how to name a skill: {text!r}')


async def flow_context(s: Session, d: dict[str, Any]) -> None:
    """Two messages in a context the client chose (--context-id), as a CLI's `--context-id` does:
    both tasks keep that contextId (A2A §3.4.1: an agent must not replace it), and ListTasks with
    that contextId finds them."""
    context_id = s.args.context_id
    check(bool(context_id), 'the context flow needs --context-id')
    card = await s.card()
    client = s.client(card, streaming=False)
    try:
        tasks = []
        for n in range(2):
            msg = s.message(f'{s.args.text} [context {n}]', s.skill(s.args.echo_skill))
            msg.context_id = context_id
            tasks.append(await send_blocking(client, msg))
        listed = await client.list_tasks(ListTasksRequest(context_id=context_id))
    finally:
        await client.close()
    d.update(
        contexts=[t.context_id for t in tasks],
        task_ids=[t.id for t in tasks],
        listed=sorted(t.id for t in listed.tasks),
    )
    check(all(t.context_id == context_id for t in tasks), f'contextId replaced: {d["contexts"]}')
    missing = [t.id for t in tasks if t.id not in d['listed']]
    check(not missing, f'ListTasks(contextId) does not find {missing}: {d["listed"]}')


async def flow_get_unknown(s: Session, d: dict[str, Any]) -> None:
    """GetTask of a task that does not exist raises the SDK's TaskNotFoundError, in every binding
    and version (the 0.3 HTTP+JSON transport reads the error's `type`; a bare 404 it reads as
    "method not found")."""
    from a2a.utils.errors import TaskNotFoundError

    card = await s.card()
    client = s.client(card, streaming=False)
    try:
        await client.get_task(GetTaskRequest(id=f'no-such-{uuid.uuid4()}'))
    except Exception as e:  # noqa: BLE001 - the type is the check
        d.update(error_type=type(e).__name__, raised=str(e)[:200])
    else:
        raise CheckError('GetTask of an unknown task succeeded')
    finally:
        await client.close()
    check(d['error_type'] == TaskNotFoundError.__name__, f'raised {d["error_type"]}, want TaskNotFoundError')


FLOW_FUNCS: dict[str, Callable[[Session, dict[str, Any]], Awaitable[None]]] = {
    'card': flow_card,
    'extended': flow_extended,
    'send': flow_send,
    'stream': flow_stream,
    'get': flow_get,
    'cancel': flow_cancel,
    'multiturn': flow_multiturn,
    'push': flow_push,
    'data': flow_data,
    'ambiguous': flow_ambiguous,
    'context': flow_context,
    'get-unknown': flow_get_unknown,
}
