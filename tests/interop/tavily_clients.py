"""Tavily's own clients against websearchd's Tavily door: tavily-python's TavilyClient and LangChain's TavilySearch
and TavilyExtract, pointed at BASE (http://127.0.0.1:PORT/tavily) as a user points them.

Usage: tavily_clients.py PLAN  (PLAN: JSON {"base": URL, "key": KEY or null, "calls": [{"kind": K, "args": {...}}]};
K is search or extract (TavilyClient), lc_search or lc_extract (LangChain's tools, invoked with args))
Prints one JSON line: a list with, for each call, {"ok": what the client returned} or {"error": the exception's
class name, "message": its words}.
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")

from langchain_tavily import TavilyExtract, TavilySearch
from tavily import TavilyClient


def run(plan: dict, call: dict):
    base, key, args = plan["base"], plan.get("key"), call.get("args", {})
    kind = call["kind"]
    if kind == "search":
        return TavilyClient(api_key=key, api_base_url=base).search(**args)
    if kind == "extract":
        return TavilyClient(api_key=key, api_base_url=base).extract(**args)
    # LangChain's tools need a key; any key is what a user of a free instance gives.
    lc_key = key or "tvly-anything"
    if kind == "lc_search":
        tool = TavilySearch(api_base_url=base, tavily_api_key=lc_key, **call.get("tool", {}))
        return tool.invoke(args)
    if kind == "lc_extract":
        tool = TavilyExtract(api_base_url=base, tavily_api_key=lc_key, **call.get("tool", {}))
        return tool.invoke(args)
    raise ValueError(f"unknown kind {kind}")


def main() -> None:
    plan = json.loads(sys.argv[1])
    out = []
    for call in plan["calls"]:
        try:
            got = run(plan, call)
            # LangChain's tools return {"error": exception} rather than raising.
            if isinstance(got, dict) and isinstance(got.get("error"), Exception):
                e = got["error"]
                out.append({"error": type(e).__name__, "message": str(e)})
            else:
                out.append({"ok": got})
        except Exception as e:  # noqa: BLE001 - the test reads which error the client raised
            out.append({"error": type(e).__name__, "message": str(e)})
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
