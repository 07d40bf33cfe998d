"""Drives `websearchd mcp` with the official MCP Python SDK client (PyPI `mcp`) over stdio.

For each connect mode of the SDK ("auto": the 2026-07-28 `server/discover` probe; "legacy": the `initialize`
handshake) it starts the server, lists the tools, calls web_search (plainly, then with every control of issue 31 and
the pages of its first results, then with a malformed control), calls extract_page on an allowed page (whole, then
cut for a query) and on a refused one, and prints one JSON line with what it saw, for tests/interop.rs to compare
with `/service`.

Usage: python mcp_client.py BINARY QUERY ALLOWED_URL REFUSED_URL
The WEBSEARCHD_* variables of this process are passed to the server (the SDK passes only a few by default).
"""

import asyncio
import json
import os
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def run(mode, binary, query, allowed_url, refused_url):
    env = {k: v for k, v in os.environ.items() if k.startswith("WEBSEARCHD_")}
    server = StdioServerParameters(command=binary, args=["mcp"], env=env)
    async with Client(server, mode=mode) as client:
        listing = await client.list_tools()
        tools = {t.name: t for t in listing.tools}
        assert set(tools) == {"web_search", "extract_page"}, sorted(tools)
        for tool in tools.values():
            assert tool.input_schema["type"] == "object", tool.name
            assert tool.output_schema["type"] == "object", tool.name
        # The SDK checks structuredContent against the tool's outputSchema and the result against the protocol
        # version's shape; a mismatch raises.
        search = await client.call_tool("web_search", {"query": query, "max_results": 5})
        assert not search.is_error, search
        assert search.content[0].type == "text"
        extract = await client.call_tool("extract_page", {"url": allowed_url, "tokens": 500})
        assert not extract.is_error, extract
        # Issue 39: over its budget, the page keeps what the query asks about.
        focused = await client.call_tool(
            "extract_page", {"url": allowed_url, "tokens": 100, "query": "crashes per month"}
        )
        assert not focused.is_error, focused
        refused = await client.call_tool("extract_page", {"url": refused_url})
        assert refused.is_error, refused
        bad = await client.call_tool("web_search", {"query": "   "})
        assert bad.is_error, bad
        controlled = await client.call_tool(
            "web_search",
            {
                "query": query + " controls",
                "time_range": "week",
                "region": "de-de",
                "safesearch": "strict",
                "exclude_domains": ["doc.rust-lang.org"],
                "extract": 2,
                "extract_tokens": 300,
            },
        )
        assert not controlled.is_error, controlled
        bad_control = await client.call_tool("web_search", {"query": query, "time_range": "fortnight"})
        assert bad_control.is_error, bad_control
        return {
            "mode": mode,
            "protocol": client.protocol_version,
            "server": client.server_info.name if client.server_info else None,
            "tools": sorted(tools),
            "search": search.structured_content,
            "search_text": search.content[0].text,
            "extract": extract.structured_content,
            "extract_text": extract.content[0].text,
            "focused": focused.structured_content,
            "refused": refused.structured_content,
            "bad": bad.structured_content,
            "controlled": controlled.structured_content,
            "bad_control": bad_control.structured_content,
        }


async def main():
    binary, query, allowed_url, refused_url = sys.argv[1:5]
    for mode in ("auto", "legacy"):
        print(json.dumps(await run(mode, binary, query, allowed_url, refused_url)), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
