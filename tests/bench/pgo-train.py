"""The training run of the profile-guided build (deploy/build-optimized.sh): drives a gateway built
with instrumentation, in front of the bench backend, through every caller binding and dialect, so that
the profile the compiler optimizes for is the gateway's whole public surface, not only the benchmark's
1.0 JSON-RPC call. The benchmark's own scenarios (saturation, streams, card) run before it.

    pgo-train.py PORT [--rounds N]

Each round: JSON-RPC 1.0 (SendMessage, SendStreamingMessage, GetTask, ListTasks), JSON-RPC 0.3
(message/send, message/stream, tasks/get), HTTP+JSON 1.0 and 0.3 (send, stream, get), gRPC 1.0
(SendMessage, SendStreamingMessage, GetTask), the Agent Cards, and requests the gateway refuses
(malformed JSON, an unknown method, a missing field, an unknown task). Prints how many answers of each
kind came back; exits non-zero when a kind that should succeed never did (the training would then miss
the path it names)."""

import argparse
import http.client
import json
import sys
from collections import Counter

import grpc
from a2a.types import a2a_pb2, a2a_pb2_grpc

args = argparse.ArgumentParser()
args.add_argument("port", type=int)
args.add_argument("--rounds", type=int, default=200)
args = args.parse_args()

V1 = {"a2a-version": "1.0", "content-type": "application/json"}
V03 = {"content-type": "application/json"}
MESSAGE_V1 = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}], "metadata": {"skillId": "bench"}}
MESSAGE_V03 = {"kind": "message", "messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "hello"}],
               "metadata": {"skillId": "bench"}}
STREAM = {"benchEvents": 3, "benchIntervalMs": 0}
tally = Counter()
conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)


def call(kind, method, path, headers, body=None):
    """Sends one request on the kept-alive connection, reads the whole answer, tallies its status."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=headers)
    answer = conn.getresponse()
    payload = answer.read()
    ok = answer.status == 200 and b'"error"' not in payload[:200]
    tally[(kind, "ok" if ok else f"error (HTTP {answer.status})")] += 1
    return payload


def rpc(method, params):
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def task_id(payload, *path):
    try:
        value = json.loads(payload)
        for key in path:
            value = value[key]
        return value
    except (ValueError, KeyError, TypeError):
        return "unknown-task"


channel = grpc.insecure_channel(f"127.0.0.1:{args.port}")
stub = a2a_pb2_grpc.A2AServiceStub(channel)
grpc_message = a2a_pb2.Message(message_id="m-1", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")])
grpc_message.metadata.update({"skillId": "bench"})


def grpc_call(kind, fn, request, streaming=False):
    try:
        answer = fn(request, metadata=[("a2a-version", "1.0")], timeout=30)
        if streaming:
            answer = list(answer)
        tally[(kind, "ok")] += 1
        return answer
    except grpc.RpcError as error:
        tally[(kind, error.code().name)] += 1
        return None


for _ in range(args.rounds):
    # JSON-RPC 1.0
    sent = call("jsonrpc-1.0 SendMessage", "POST", "/", V1, rpc("SendMessage", {"message": MESSAGE_V1}))
    task = task_id(sent, "result", "task", "id")
    call("jsonrpc-1.0 SendStreamingMessage", "POST", "/", V1,
         rpc("SendStreamingMessage", {"message": MESSAGE_V1, "metadata": STREAM}))
    call("jsonrpc-1.0 GetTask", "POST", "/", V1, rpc("GetTask", {"id": task, "historyLength": 1}))
    call("jsonrpc-1.0 ListTasks", "POST", "/", V1, rpc("ListTasks", {"pageSize": 5}))
    # JSON-RPC 0.3
    sent = call("jsonrpc-0.3 message/send", "POST", "/", V03, rpc("message/send", {"message": MESSAGE_V03}))
    task03 = task_id(sent, "result", "id")
    call("jsonrpc-0.3 message/stream", "POST", "/", V03,
         rpc("message/stream", {"message": MESSAGE_V03, "metadata": STREAM}))
    call("jsonrpc-0.3 tasks/get", "POST", "/", V03, rpc("tasks/get", {"id": task03}))
    # HTTP+JSON 1.0 and 0.3
    sent = call("rest-1.0 message:send", "POST", "/message:send", V1, {"message": MESSAGE_V1})
    call("rest-1.0 message:stream", "POST", "/message:stream", V1, {"message": MESSAGE_V1, "metadata": STREAM})
    call("rest-1.0 tasks/{id}", "GET", f"/tasks/{task_id(sent, 'task', 'id')}", {"a2a-version": "1.0"})
    sent = call("rest-0.3 message:send", "POST", "/v1/message:send", V03,
                {"request": {"messageId": "m-1", "role": "ROLE_USER", "content": [{"text": "hello"}],
                             "metadata": {"skillId": "bench"}}})
    call("rest-0.3 message:stream", "POST", "/v1/message:stream", V03,
         {"request": {"messageId": "m-1", "role": "ROLE_USER", "content": [{"text": "hello"}],
                      "metadata": {"skillId": "bench"}}, "metadata": STREAM})
    call("rest-0.3 tasks/{id}", "GET", f"/v1/tasks/{task_id(sent, 'task', 'id')}", {})
    # gRPC 1.0
    answer = grpc_call("grpc SendMessage", stub.SendMessage, a2a_pb2.SendMessageRequest(message=grpc_message))
    grpc_call("grpc SendStreamingMessage", stub.SendStreamingMessage,
              a2a_pb2.SendMessageRequest(message=grpc_message), streaming=True)
    if answer is not None and answer.HasField("task"):
        grpc_call("grpc GetTask", stub.GetTask, a2a_pb2.GetTaskRequest(id=answer.task.id))
    # Cards
    call("card /.well-known/agent-card.json", "GET", "/.well-known/agent-card.json", {})
    call("card /agents/bench/.well-known/agent-card.json", "GET", "/agents/bench/.well-known/agent-card.json", {})
    # Refused requests: every one answers an error, which is the path being trained.
    call("refused malformed JSON", "POST", "/", V1, b'{"jsonrpc":"2.0","id":1,"method":')
    call("refused unknown method", "POST", "/", V1, rpc("NoSuchMethod", {}))
    call("refused missing message", "POST", "/", V1, rpc("SendMessage", {}))
    call("refused unknown task", "POST", "/", V1, rpc("GetTask", {"id": "no-such-task"}))

kinds = sorted({kind for kind, _ in tally})
for kind in kinds:
    outcomes = ", ".join(f"{outcome} {count}" for (k, outcome), count in sorted(tally.items()) if k == kind)
    print(f"{kind}: {outcomes}")
never = [kind for kind in kinds if not kind.startswith("refused") and tally[(kind, "ok")] == 0]
if never:
    sys.exit(f"never answered successfully: {', '.join(never)}")
