"""Checks websearchd's discovery documents and signed answers with standard third-party tools only:

- the agent card verifies with the official A2A SDK (PyPI a2a-sdk[signing]), which rebuilds the card through its
  v1.0 model and canonicalises it before checking;
- the card's JWS verifies with a JOSE library (jwcrypto), given the canonical payload;
- an answer's signature verifies with pyca `cryptography`, following only what /pubkey says (both signed objects);
- /llms.txt parses with the llms-txt package.

Usage: python verify_documents.py BASE_URL   (prints one line per check; exits non-zero on the first failure)
"""

import base64
import hashlib
import json
import sys
import urllib.request

from a2a.client.card_resolver import parse_agent_card
from a2a.utils._jcs import canonicalize
from a2a.utils.signing import create_signature_verifier
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from jwcrypto import jwk, jws
from jwt import PyJWK
from llms_txt import parse_llms_file


def get(url, headers=None, data=None):
    req = urllib.request.Request(url, data=data, headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read(), {k.lower(): v for k, v in r.headers.items()}


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def main():
    base = sys.argv[1].rstrip("/")
    jwks = json.loads(get(base + "/.well-known/jwks.json")[0])
    by_kid = {k["kid"]: k for k in jwks["keys"]}

    # 1. The A2A SDK verifies the card.
    card_json = json.loads(get(base + "/.well-known/agent-card.json")[0])
    card = parse_agent_card(json.loads(json.dumps(card_json)))

    def key_provider(kid, jku):
        return PyJWK(by_kid[kid])

    create_signature_verifier(key_provider, ["EdDSA"])(card)
    print("a2a-sdk: agent card signature valid")

    # 2. A JOSE library verifies the same JWS over the canonical card.
    sig = card_json["signatures"][0]
    header = json.loads(b64url_decode(sig["protected"]))
    assert header["alg"] == "EdDSA" and header["typ"] == "JOSE", header
    assert by_kid[header["kid"]]["purpose"] == "card", "the card is signed by the card key"
    unsigned = {k: v for k, v in card_json.items() if k != "signatures"}
    payload = canonicalize(unsigned).encode()
    token = jws.JWS()
    compact = sig["protected"] + "." + base64.urlsafe_b64encode(payload).rstrip(b"=").decode() + "." + sig["signature"]
    token.deserialize(compact)
    token.verify(jwk.JWK(**by_kid[header["kid"]]), alg="EdDSA")
    print("jwcrypto: agent card JWS valid")

    # 3. pyca cryptography verifies answers, following /pubkey.
    procedure = json.loads(get(base + "/pubkey")[0])
    assert procedure["answers"]["headers"]["X-Signature"].startswith("standard base64")
    for form in ("raw", "sha256-hex"):
        body, headers = get(
            base + "/service",
            headers={"Content-Type": "application/json", "X-Signed-Object": form},
            data=json.dumps({"query": "interop " + form}).encode(),
        )
        key = by_kid[headers["x-signature-kid"]]
        assert key["purpose"] == "result", key
        assert headers["x-signed-object"] == form
        signed = body if form == "raw" else hashlib.sha256(body).hexdigest().encode("ascii")
        public = Ed25519PublicKey.from_public_bytes(b64url_decode(key["x"]))
        public.verify(base64.b64decode(headers["x-signature"], validate=True), signed)
        assert json.loads(body)["kid"] == key["kid"]
        print(f"cryptography: answer signature valid ({form})")

    # 4. /llms.txt parses.
    text = get(base + "/llms.txt")[0].decode()
    parsed = parse_llms_file(text)
    assert parsed.title == "websearchd", parsed.title
    assert parsed.summary and "API" in parsed.sections and "Optional" in parsed.sections
    assert any(link["url"].endswith("/service") for link in parsed.sections["API"])
    print("llms-txt: parsed, sections " + ", ".join(parsed.sections))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # report every failure as a clear line and a non-zero exit
        print(f"FAILED: {type(e).__name__}: {e}")
        raise
