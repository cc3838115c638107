"""Verifies the signatures of an Agent Card as a client would, with independent implementations:
jwcrypto for JOSE and rfc8785 for the canonical JSON (A2A 1.0 section 8.4: a JWS with detached
payload over the RFC 8785 form of the card without `signatures`).

    python verify_card.py --card URL --jwks URL [--a2a-version 1.0|none] [--tamper] [--bearer T]

The key comes from --jwks (the gateway's /.well-known/jwks.json) by the `kid` of the protected
header, whose `jku` must be that same URL. --tamper changes the card's name before verifying
(which must then fail). Prints one JSON line {"ok": bool, "detail": ...}; exit 0 only when ok.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys

import httpx
import rfc8785
from jwcrypto import jwk, jws


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode()


def verify(card: dict, jwks: dict, jwks_url: str) -> list[dict]:
    signatures = card.pop('signatures', None)
    if not signatures:
        raise ValueError('the card has no signatures')
    payload = b64url(rfc8785.dumps(card))
    keys = jwk.JWKSet.from_json(json.dumps(jwks))
    checked = []
    for entry in signatures:
        header = json.loads(base64.urlsafe_b64decode(entry['protected'] + '=='))
        if header.get('jku') != jwks_url:
            raise ValueError(f'jku {header.get("jku")!r} is not {jwks_url!r}')
        key = keys.get_key(header['kid'])
        if key is None:
            raise ValueError(f'no key {header["kid"]!r} in the JWKS')
        token = jws.JWS()
        token.deserialize(f'{entry["protected"]}.{payload}.{entry["signature"]}')
        token.verify(key)  # raises on a bad signature
        checked.append({'alg': header['alg'], 'kid': header['kid']})
    return checked


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    p.add_argument('--card', required=True)
    p.add_argument('--jwks', required=True)
    p.add_argument('--a2a-version', default='1.0', help="'none' sends no A2A-Version header")
    p.add_argument('--tamper', action='store_true')
    p.add_argument('--bearer', help='Authorization: Bearer TOKEN (an extended card)')
    args = p.parse_args()
    headers = {} if args.a2a_version == 'none' else {'A2A-Version': args.a2a_version}
    if args.bearer:
        headers['Authorization'] = f'Bearer {args.bearer}'
    try:
        card = httpx.get(args.card, headers=headers, timeout=10).json()
        jwks = httpx.get(args.jwks, timeout=10).json()
        if args.tamper:
            card['name'] = card.get('name', '') + ' (tampered)'
        detail: object = verify(card, jwks, args.jwks)
        ok = True
    except Exception as e:  # noqa: BLE001 - every failure is a result line
        detail, ok = f'{type(e).__name__}: {e}', False
    print(json.dumps({'ok': ok, 'detail': detail}), flush=True)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
