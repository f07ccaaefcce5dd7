"""FastMCP (PyPI `fastmcp`, pinned in xtask/mcp-servers) serving one tool over HTTP, for the HTTP
benchmark (benches/http.rs).

The tool is the one plain rmcp serves there: it answers every call with a fixed structured
result (the answer Switchboard gave at start-up, in BENCH_TOOL_RESULT), as JSON text and as
`structuredContent`, so the rows differ by their server stack, not by the tool.

Usage: target/mcp-servers/venv/bin/python fastmcp_server.py default|fastest, with
BENCH_TOOL_NAME and BENCH_TOOL_RESULT set. It listens on a free loopback port (a socket bound
here and handed to `run_http_async(sockets=...)`) and prints
`listening on http://127.0.0.1:PORT/mcp` once the socket listens.

The two modes, from FastMCP's docs:
- default: `transport="http"` and nothing else, as "HTTP Deployment"
  (https://gofastmcp.com/deployment/http) runs a server: Streamable HTTP that keeps a session
  per client ("By default, FastMCP's Streamable HTTP transport maintains server-side sessions")
  and answers as SSE streams;
- fastest: `stateless_http=True` (the same guide, "Horizontal Scaling", "Enabling Stateless
  Mode": a fresh transport context per request, no sessions) and `json_response=True` (plain
  JSON answers instead of SSE streams), both parameters of `run_http_async`
  (https://gofastmcp.com/python-sdk/fastmcp-server-mixins-transport), as is `sockets`.
FastMCP runs on the official Python SDK (`mcp`), which speaks 2026-07-28 beside 2025-11-25 in
either mode.
"""

import asyncio
import json
import os
import socket
import sys

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from mcp.types import TextContent


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) == 2 else ""
    tool_name = os.environ.get("BENCH_TOOL_NAME")
    result_json = os.environ.get("BENCH_TOOL_RESULT")
    if mode not in ("default", "fastest") or not tool_name or not result_json:
        sys.exit(
            "usage: BENCH_TOOL_NAME=… BENCH_TOOL_RESULT={…} python fastmcp_server.py "
            "default|fastest"
        )
    result = json.loads(result_json)
    result_text = json.dumps(result, separators=(",", ":"))

    mcp = FastMCP("bench-fastmcp")

    @mcp.tool(name=tool_name, description="Answers with a fixed structured result.")
    def fixed_answer() -> ToolResult:
        return ToolResult(
            content=[TextContent(type="text", text=result_text)],
            structured_content=result,
        )

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    # Listening before the server starts: a client that connects early waits in the backlog.
    listener.listen(1024)
    port = listener.getsockname()[1]
    options = {"stateless_http": True, "json_response": True} if mode == "fastest" else {}
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    asyncio.run(
        mcp.run_http_async(
            show_banner=False,
            transport="http",
            host="127.0.0.1",
            port=port,
            log_level="warning",
            sockets=[listener],
            **options,
        )
    )


if __name__ == "__main__":
    main()
