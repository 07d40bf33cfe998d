"""Does what websearchd's A2A agent card says, with the official A2A SDK (PyPI a2a-sdk 1.3):

- the SDK's resolver fetches the card from the well-known path, and it verifies with the card key;
- the card lists no A2A protocol binding (none is served), so the SDK's client factory finds no transport rather
  than making a client whose message:send would get 404;
- each skill's description names the plain HTTP call; the websearch skill's call answers: 200 with results on a free
  instance, and on a paid one 402 with exactly the terms of the card's x402 extension.

Usage: python a2a_card.py BASE_URL   (prints one line per check; exits non-zero on the first failure)
"""

import asyncio
import base64
import json
import re
import sys
from urllib.parse import urlparse

import httpx
from a2a.client.card_resolver import A2ACardResolver
from a2a.client.client import ClientConfig
from a2a.client.client_factory import ClientFactory
from a2a.utils.constants import TransportProtocol
from a2a.utils.signing import create_signature_verifier
from google.protobuf.json_format import MessageToDict
from jwt import PyJWK


async def main():
    base = sys.argv[1].rstrip("/")
    async with httpx.AsyncClient(timeout=30) as http:
        jwks = (await http.get(base + "/.well-known/jwks.json")).json()
        by_kid = {k["kid"]: k for k in jwks["keys"]}
        verifier = create_signature_verifier(lambda kid, jku: PyJWK(by_kid[kid]), ["EdDSA"])
        card = await A2ACardResolver(http, base).get_agent_card(signature_verifier=verifier)
        print("a2a-sdk: card resolved from the well-known path and its signature verified")

        assert len(card.supported_interfaces) == 0, card.supported_interfaces
        bindings = [TransportProtocol.HTTP_JSON, TransportProtocol.JSONRPC]
        try:
            ClientFactory(ClientConfig(httpx_client=http, supported_protocol_bindings=bindings)).create(card)
        except ValueError as e:
            assert "no compatible transports" in str(e), e
            print("a2a-sdk: no A2A transport advertised, so no client is made (" + str(e) + ")")
        else:
            raise AssertionError("the SDK made a client for an interface that is not served")
        for path in ("/message:send", "/v1/message:send"):
            sent = await http.post(base + path, json={"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "q"}]}})
            assert sent.status_code == 404, (path, sent.status_code)

        skill = next(s for s in card.skills if s.id == "websearch")
        url = re.search(r"POST (\S+) with", skill.description).group(1)
        example = json.loads(skill.examples[0])
        # The card names the public URL; this test reaches the same server at BASE_URL.
        answer = await http.post(base + urlparse(url).path, json=example)
        extensions = {e.uri: MessageToDict(e.params) for e in card.capabilities.extensions}
        x402 = extensions.get("https://github.com/google-a2a/a2a-x402/v0.1")
        if x402 is None:
            assert answer.status_code == 200, answer.text
            assert answer.json()["results"], answer.text
            print("websearch skill: free call answered 200 with results")
        else:
            assert answer.status_code == 402, answer.text
            challenge = json.loads(base64.b64decode(answer.headers["PAYMENT-REQUIRED"]))
            accepted = challenge["accepts"][0]
            for key in ("scheme", "network", "asset", "payTo", "amount"):
                assert accepted[key].lower() == x402[key].lower(), (key, accepted[key], x402[key])
            assert challenge["resource"]["url"] == x402["resource"] == url
            print("websearch skill: 402 with the card's x402 terms")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # report every failure as a clear line and a non-zero exit
        print(f"FAILED: {type(e).__name__}: {e}")
        raise
