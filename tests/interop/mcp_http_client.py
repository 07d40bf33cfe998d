"""Pays websearchd's `/mcp` (MCP Streamable HTTP) with the official clients: the MCP Python SDK (PyPI `mcp`,
`streamable_http_client` and `ClientSession`) and the x402 MCP client of PyPI `x402` (`x402.mcp.x402MCPSession`,
signing with `eth-account` through `register_exact_evm_client`).

x402 2.25.0's `x402MCPSession` was written against the 1.x SDK: it reads results by their wire names (`isError`,
`structuredContent`) and passes a `timedelta` timeout, where mcp 2.3.0 has snake_case attributes and float seconds.
`Session2` is that shim and nothing more: the payment logic (finding `PaymentRequired`, signing, `_meta`, reading the
settlement) is the x402 library's.

Usage: python mcp_http_client.py URL QUERY
A fresh throwaway key is generated on every run; nothing touches a chain (the facilitator is a loopback test server).
It calls web_search without payment (refused with the payment requirements), then through the x402 MCP client (which
pays and retries), then replays the payment the x402 client made (refused), all in the `initialize` era (as the x402
client connects); then pays once more through the SDK's `Client` in its default mode (2026-07-28: `server/discover`,
the version and method in headers and `_meta`). It prints one JSON line with what it saw.
"""

import asyncio
import json
import sys
from types import SimpleNamespace

from eth_account import Account
from mcp import ClientSession
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from x402 import x402Client
from x402.mcp import x402MCPSession
from x402.mechanisms.evm.exact.register import register_exact_evm_client
from x402.mechanisms.evm.signers import EthAccountSigner


class Recording(x402Client):
    """The official async x402 client, keeping the payloads it makes so that one can be replayed."""

    def __init__(self):
        super().__init__()
        self.payloads = []

    async def create_payment_payload(self, *args, **kwargs):
        payload = await super().create_payment_payload(*args, **kwargs)
        self.payloads.append(payload)
        return payload


class Session2:
    """An mcp 2.x `ClientSession` as `x402MCPSession` expects one (see the module's doc)."""

    def __init__(self, session):
        self._session = session

    async def initialize(self):
        return await self._session.initialize()

    async def list_tools(self):
        return await self._session.list_tools()

    async def call_tool(self, name, arguments=None, read_timeout_seconds=None, meta=None):
        if read_timeout_seconds is not None and hasattr(read_timeout_seconds, "total_seconds"):
            read_timeout_seconds = read_timeout_seconds.total_seconds()
        result = await self._session.call_tool(name, arguments, read_timeout_seconds, meta=meta)
        return SimpleNamespace(
            isError=result.is_error,
            structuredContent=result.structured_content,
            content=result.content,
            meta=result.meta,
            result=result,
        )


def dump(result):
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def main():
    url, query = sys.argv[1:3]
    account = Account.create()
    payer = Recording()
    register_exact_evm_client(payer, EthAccountSigner(account))
    arguments = {"query": query, "max_results": 5}
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            paid = x402MCPSession(Session2(session), payer)
            await paid.initialize()
            tools = sorted(t.name for t in (await paid.list_tools()).tools)
            unpaid = await session.call_tool("web_search", arguments)
            result = await paid.call_tool("web_search", arguments)
            replay_meta = {"x402/payment": payer.payloads[0].model_dump(by_alias=True)}
            replayed = await session.call_tool("web_search", arguments, meta=replay_meta)
    async with Client(url) as client:
        modern = await x402MCPSession(Session2(client), payer).call_tool("web_search", {"query": query + " again"})
        modern_protocol = client.protocol_version
    settlement = result.payment_response
    if settlement is not None and hasattr(settlement, "model_dump"):
        settlement = settlement.model_dump(by_alias=True, mode="json", exclude_none=True)
    raw = result.raw_result.result
    print(json.dumps({
        "protocol": session.protocol_version,
        "tools": tools,
        "payer": account.address,
        "unpaid": dump(unpaid),
        "paid": {
            "payment_made": result.payment_made,
            "is_error": result.is_error,
            "text": raw.content[0].text,
            "structured": raw.structured_content,
            "settlement": settlement,
        },
        "replayed": dump(replayed),
        "modern": {
            "protocol": modern_protocol,
            "payment_made": modern.payment_made,
            "result": dump(modern.raw_result.result),
        },
    }))
    ok = result.payment_made and not result.is_error and (settlement or {}).get("success") is True
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
