"""Reads SendMessage params the way an a2a-sdk 1.x agent does, for the differential test.

Each line of stdin is a JSON string holding one params object as raw text. For each, one line of
stdout: the ids and skill names the SDK's own parser (json.loads, then protobuf ParseDict into
SendMessageRequest, as the SDK's JSON-RPC dispatcher does) reads out of it, or the error it raises.
"""

import json
import sys

from a2a.types import a2a_pb2
from google.protobuf.json_format import MessageToDict, ParseDict


def read(raw: str) -> dict:
    try:
        request = ParseDict(json.loads(raw), a2a_pb2.SendMessageRequest(), ignore_unknown_fields=True)
    except Exception as error:  # the SDK answers any of these with an error: nothing is acted on
        return {'ok': False, 'error': type(error).__name__}
    message = request.message
    meta = MessageToDict(message.metadata) if message.HasField('metadata') else {}
    request_meta = MessageToDict(request.metadata) if request.HasField('metadata') else {}
    skills = sorted({str(m[k]) for m in (meta, request_meta) for k in ('skillId', 'skill_id') if k in m})
    return {
        'ok': True,
        'message_id': message.message_id,
        'task_id': message.task_id,
        'context_id': message.context_id,
        'reference_task_ids': list(message.reference_task_ids),
        'skills': skills,
    }


for line in sys.stdin:
    line = line.strip()
    if line:
        print(json.dumps(read(json.loads(line))), flush=True)
