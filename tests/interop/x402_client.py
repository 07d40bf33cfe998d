"""Pays websearchd with the official x402 Python client (PyPI `x402`, `eth-account`) and checks the answer.

Usage: python x402_client.py URL [BODY]
BODY is the JSON to POST (default: a search for /service); the reader door (/extract) is paid the same way.
A fresh throwaway key is generated on every run; nothing touches a chain (the facilitator is a loopback test server).
Prints one JSON line with what it saw; exits non-zero if the paid call did not succeed.
"""

import base64
import json
import sys

from eth_account import Account
from x402 import x402ClientSync
from x402.http.clients import x402_requests
from x402.mechanisms.evm.exact.register import register_exact_evm_client
from x402.mechanisms.evm.signers import EthAccountSigner


def main() -> int:
    url = sys.argv[1]
    request = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {"query": "interop test", "max_results": 3}
    account = Account.create()
    client = x402ClientSync()
    register_exact_evm_client(client, EthAccountSigner(account))
    session = x402_requests(client)
    response = session.post(url, json=request, timeout=30)
    settlement = response.headers.get("PAYMENT-RESPONSE")
    decoded = json.loads(base64.b64decode(settlement)) if settlement else None
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else None
    print(json.dumps({
        "status": response.status_code,
        "payer": account.address,
        "results": len(body.get("results", [])) if isinstance(body, dict) else None,
        "pages": [p.get("status") for p in body.get("pages", [])] if isinstance(body, dict) else None,
        "settlement": decoded,
    }))
    ok = response.status_code == 200 and decoded is not None and decoded.get("success") is True
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
