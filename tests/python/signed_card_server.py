"""Serves one Agent Card signed as A2A 1.0 section 8.4 says, with jwcrypto over the rfc8785
canonical form (independent of the gateway's code), for the gateway's signature checks.

    python signed_card_server.py --port 0 --key KEY.pem --kid K --jwks-out JWKS.json [--tamper]

--jwks-out receives the public key as a JWKS; --tamper changes the description after signing.
Prints `READY http://127.0.0.1:PORT` once it serves.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import rfc8785
from jwcrypto import jwk, jws


def signed_card(base: str, key: jwk.JWK, kid: str, tamper: bool) -> dict:
    card = {
        'name': 'Signed agent',
        'description': 'An agent whose card is signed',
        'version': '1.0.0',
        'supportedInterfaces': [
            {'url': f'{base}/', 'protocolBinding': 'JSONRPC', 'protocolVersion': '1.0'}
        ],
        'capabilities': {'streaming': False},
        'defaultInputModes': ['text/plain'],
        'defaultOutputModes': ['text/plain'],
        'skills': [
            {'id': 'signed-echo', 'name': 'Signed echo', 'description': 'Echoes', 'tags': ['echo']}
        ],
    }
    token = jws.JWS(rfc8785.dumps(card))
    token.add_signature(key, alg='ES256', protected=json.dumps({'alg': 'ES256', 'kid': kid, 'typ': 'JOSE'}))
    protected, _, signature = token.serialize(compact=True).split('.')
    card['signatures'] = [{'protected': protected, 'signature': signature}]
    if tamper:
        card['description'] += ' (changed after signing)'
    return card


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    p.add_argument('--port', type=int, default=0)
    p.add_argument('--key', required=True)
    p.add_argument('--kid', required=True)
    p.add_argument('--jwks-out', required=True)
    p.add_argument('--tamper', action='store_true')
    args = p.parse_args()
    key = jwk.JWK.from_pem(open(args.key, 'rb').read())
    public = json.loads(key.export_public())
    public['kid'] = args.kid
    with open(args.jwks_out, 'w') as out:
        json.dump({'keys': [public]}, out)

    server = ThreadingHTTPServer(('127.0.0.1', args.port), BaseHTTPRequestHandler)
    base = f'http://127.0.0.1:{server.server_address[1]}'
    body = json.dumps(signed_card(base, key, args.kid, args.tamper)).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server.RequestHandlerClass = Handler
    print(f'READY {base}', flush=True)
    server.serve_forever()
    return 0


if __name__ == '__main__':
    sys.exit(main())
