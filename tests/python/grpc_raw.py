"""One raw gRPC call to an A2A 1.0 service (lf.a2a.v1.A2AService), for the gateway's gRPC tests.

The request is given in ProtoJSON and encoded with the SDK's own a2a_pb2 types; bytes can be
appended to the request message or to its `message` field (unknown fields a gateway must not pass
on). Answers are decoded with a2a_pb2 too, so what this prints is what a stock gRPC client reads.

    python grpc_raw.py --target HOST:PORT --method GetTask --request '{"id": "t1"}'
                       [--metadata 'name: value']... [--append-hex HEX] [--append-message-hex HEX]

Prints one JSON line: {"code": "OK"|"NOT_FOUND"|..., "message": ..., "reasons": [ErrorInfo
reasons], "domains": [...], "responses": [ProtoJSON of each answer message]}. Exit status 0 when
the call could be made (whatever its status).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

from a2a.types import a2a_pb2

INPUTS = {
    'SendMessage': ('SendMessageRequest', 'SendMessageResponse', False),
    'SendStreamingMessage': ('SendMessageRequest', 'StreamResponse', True),
    'GetTask': ('GetTaskRequest', 'Task', False),
    'ListTasks': ('ListTasksRequest', 'ListTasksResponse', False),
    'CancelTask': ('CancelTaskRequest', 'Task', False),
    'SubscribeToTask': ('SubscribeToTaskRequest', 'StreamResponse', True),
    'CreateTaskPushNotificationConfig': (
        'TaskPushNotificationConfig',
        'TaskPushNotificationConfig',
        False,
    ),
    'GetTaskPushNotificationConfig': (
        'GetTaskPushNotificationConfigRequest',
        'TaskPushNotificationConfig',
        False,
    ),
    'GetExtendedAgentCard': ('GetExtendedAgentCardRequest', 'AgentCard', False),
}


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def request_bytes(args: argparse.Namespace) -> bytes:
    input_name, _, _ = INPUTS[args.method]
    request = json_format.Parse(args.request, getattr(a2a_pb2, input_name)())
    if args.append_message_hex:
        # Rebuild field 2 (`message` of SendMessageRequest) with extra bytes inside it.
        message = request.message.SerializeToString() + bytes.fromhex(args.append_message_hex)
        request.ClearField('message')
        data = request.SerializeToString() + b'\x12' + varint(len(message)) + message
    else:
        data = request.SerializeToString()
    return data + bytes.fromhex(args.append_hex or '')


async def call(args: argparse.Namespace) -> dict:
    _, output_name, streaming = INPUTS[args.method]
    output = getattr(a2a_pb2, output_name)
    metadata = [('a2a-version', '1.0')]
    for item in args.metadata:
        name, _, value = item.partition(':')
        name = name.strip().lower()
        # A version given replaces the default one instead of travelling beside it.
        metadata = [(n, v) for n, v in metadata if not (n == name == 'a2a-version')]
        metadata.append((name, value.strip()))
    path = f'/lf.a2a.v1.A2AService/{args.method}'
    responses: list = []
    async with grpc.aio.insecure_channel(args.target) as channel:
        kind = channel.unary_stream if streaming else channel.unary_unary
        stub = kind(path, request_serializer=lambda b: b, response_deserializer=output.FromString)
        try:
            if streaming:
                async for item in stub(request_bytes(args), metadata=metadata, timeout=args.timeout):
                    responses.append(json.loads(json_format.MessageToJson(item)))
            else:
                item = await stub(request_bytes(args), metadata=metadata, timeout=args.timeout)
                responses.append(json.loads(json_format.MessageToJson(item)))
            return {'code': 'OK', 'message': '', 'reasons': [], 'domains': [], 'responses': responses}
        except grpc.aio.AioRpcError as error:
            reasons, domains = [], []
            for key, value in error.trailing_metadata() or ():
                if key == 'grpc-status-details-bin':
                    status = status_pb2.Status.FromString(value)
                    for detail in status.details:
                        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                            info = error_details_pb2.ErrorInfo()
                            detail.Unpack(info)
                            reasons.append(info.reason)
                            domains.append(info.domain)
            return {
                'code': error.code().name,
                'message': error.details(),
                'reasons': reasons,
                'domains': domains,
                'responses': responses,
            }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    p.add_argument('--target', required=True, help='host:port')
    p.add_argument('--method', required=True, choices=sorted(INPUTS))
    p.add_argument('--request', default='{}', help='the request message in ProtoJSON')
    p.add_argument('--metadata', action='append', default=[], help='"name: value"; repeatable')
    p.add_argument('--append-hex', help='bytes appended to the request message')
    p.add_argument('--append-message-hex', help='bytes appended inside the request\'s message')
    p.add_argument('--timeout', type=float, default=30.0)
    args = p.parse_args()
    print(json.dumps(asyncio.run(call(args))), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
