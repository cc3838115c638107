"""Opens N SSE streams to a gateway in front of the bench backend, each asking the backend to hold
after its first event (benchHold), reads that first event, then holds them all for HOLD seconds.

    python3 hold-streams.py PORT N HOLD [--tls]      (--tls: TLS without verification, ALPN http/1.1)
"""
import socket
import ssl
import sys
import time

port, count, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
use_tls = "--tls" in sys.argv[4:]
body = (
    '{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m-1",'
    '"role":"ROLE_USER","parts":[{"text":"stream"}],"metadata":{"skillId":"bench"}},'
    '"metadata":{"benchEvents":2,"benchIntervalMs":0,"benchHold":true}}}'
)
request = (
    "POST / HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
    f"A2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n{body}"
).encode()
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
context.set_alpn_protocols(["http/1.1"])
held = []
for _ in range(count):
    sock = socket.create_connection(("127.0.0.1", port))
    if use_tls:
        sock = context.wrap_socket(sock, server_hostname="localhost")
    sock.sendall(request)
    received = b""
    while b"data:" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit(f"a stream closed before its first event: {received[:200]!r}")
        received += chunk
    held.append(sock)
print(f"holding {len(held)} streams", flush=True)
time.sleep(hold)
