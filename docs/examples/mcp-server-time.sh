#!/bin/sh
# Runs PyPI's mcp-server-time (an MCP server on stdio) from a virtual environment under
# ~/.cache/switchboard, made on the first run. Standard output belongs to MCP: everything the
# installation prints goes to standard error.
set -eu
venv="${XDG_CACHE_HOME:-$HOME/.cache}/switchboard/mcp-server-time"
if [ ! -x "$venv/bin/mcp-server-time" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp-server-time==2026.10.19" >&2
fi
exec "$venv/bin/mcp-server-time" "$@"
