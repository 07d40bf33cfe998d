"""LangChain's SearxSearchWrapper and its SearxSearchResults tool against websearchd's SearXNG door.

Usage: searx_langchain.py HOST QUERY  (HOST as a user gives it: http://127.0.0.1:PORT, so the wrapper asks /)
Prints one JSON line: what results(), run() and the tool returned.
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")  # langchain-community's sunset notice

from langchain_community.tools.searx_search.tool import SearxSearchResults
from langchain_community.utilities import SearxSearchWrapper


def main() -> None:
    host, query = sys.argv[1], sys.argv[2]
    wrapper = SearxSearchWrapper(searx_host=host)
    results = wrapper.results(query, num_results=10)
    text = wrapper.run(query)
    tool = SearxSearchResults(wrapper=wrapper, num_results=3)
    tool_out = tool.invoke({"query": query})
    print(json.dumps({"results": results, "run": text, "tool": tool_out}))


if __name__ == "__main__":
    main()
