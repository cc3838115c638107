"""Sends unary A2A 1.0 SendMessage calls to a gateway on 127.0.0.1 and reads each answer, for the
bench scripts that measure the gateway's own cost per request (ir-per-request.sh, tls-cost.sh).

    send-messages.py PORT REQUESTS [--connections N] [--mode plain|tls|handshake] [--ca FILE]
                     [--body-file FILE] [--token-file FILE] [--stream EVENTS] [--a2a-version V]

plain: HTTP/1.1 kept alive; tls: TLS 1.3 kept alive; handshake: a new TLS connection per request.
REQUESTS are split evenly over the connections (the remainder is not sent). Exits non-zero on any
answer other than 200. --body-file sends that JSON-RPC body instead of the plain one, --token-file
adds `Authorization: Bearer` with that token (the full-stack scenario's files in configs/).
--stream EVENTS sends SendStreamingMessage instead, asking the bench backend for EVENTS events 1 ms
apart (each its own write), and reads each stream to its end. --a2a-version sets the A2A-Version
header (default 1.0; an empty value leaves it out, as a 0.3 caller does)."""

import argparse
import socket
import ssl
import sys
import threading

BODY = (b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1",'
        b'"role":"ROLE_USER","parts":[{"text":"hello"}],"metadata":{"skillId":"bench"}}}}')

args = argparse.ArgumentParser()
args.add_argument("port", type=int)
args.add_argument("requests", type=int)
args.add_argument("--connections", type=int, default=1)
args.add_argument("--mode", choices=["plain", "tls", "handshake"], default="plain")
args.add_argument("--ca")
args.add_argument("--body-file")
args.add_argument("--token-file")
args.add_argument("--stream", type=int, metavar="EVENTS")
args.add_argument("--a2a-version", default="1.0")
args = args.parse_args()
if args.stream:
    BODY = (b'{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m-1",'
            b'"role":"ROLE_USER","parts":[{"text":"hello"}],"metadata":{"skillId":"bench"}},'
            b'"metadata":{"benchEvents":%d,"benchIntervalMs":1}}}' % args.stream)
if args.body_file:
    with open(args.body_file, "rb") as f:
        BODY = f.read().strip()
AUTH = b""
if args.token_file:
    with open(args.token_file, "rb") as f:
        AUTH = b"authorization: Bearer " + f.read().strip() + b"\r\n"
VERSION = b"a2a-version: %s\r\n" % args.a2a_version.encode() if args.a2a_version else b""
REQUEST = (b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" + VERSION
           + AUTH + b"content-length: %d\r\n\r\n" % len(BODY)) + BODY
context = None
if args.mode != "plain":
    context = ssl.create_default_context(cafile=args.ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
failures = []


def connect():
    raw = socket.create_connection(("127.0.0.1", args.port))
    return raw if context is None else context.wrap_socket(raw, server_hostname="127.0.0.1")


def one(conn, answers):
    conn.sendall(REQUEST)
    status, length, chunked = answers.readline(), 0, False
    while (line := answers.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length"):
            length = int(line.split(b":")[1])
        if line.lower().startswith(b"transfer-encoding") and b"chunked" in line.lower():
            chunked = True
    if b" 200 " not in status:
        failures.append(status)
    if not chunked:
        answers.read(length)
        return
    body = b""
    while (size := int(answers.readline().split(b";")[0], 16)) > 0:
        body += answers.read(size)
        answers.readline()
    answers.readline()
    if args.stream and body.count(b"data:") != args.stream:
        failures.append(b"%d events of %d" % (body.count(b"data:"), args.stream))


def worker(count):
    if args.mode == "handshake":
        for _ in range(count):
            conn = connect()
            one(conn, conn.makefile("rb"))
            conn.close()
        return
    conn = connect()
    answers = conn.makefile("rb")
    for _ in range(count):
        one(conn, answers)
    conn.close()


threads = [threading.Thread(target=worker, args=(args.requests // args.connections,))
           for _ in range(args.connections)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if failures:
    sys.exit(f"{len(failures)} answers other than 200, e.g. {failures[0]!r}")
