#!/usr/bin/env bash
# mcp-servers.sh — install the MCP servers the live MCP spec runs against,
# cached: @modelcontextprotocol/server-memory and server-everything from npm
# (npm install --prefix), and PyPI's `mcp` SDK in a venv for
# scripts/mcp/ledger_server.py.
#
# Usage:
#   scripts/mcp-servers.sh ensure   # install what is missing; prints KEY=VALUE lines
#   scripts/mcp-servers.sh paths    # prints KEY=VALUE lines; exit 1 if anything is missing
#
# KEY=VALUE lines: MCP_MEMORY_BIN, MCP_EVERYTHING_BIN (node programs),
# MCP_PYTHON (the venv's python, with `mcp` installed).
#
# Environment:
#   HARNESS_CACHE_DIR   cache root (default: $HOME/.cache/harness)
#   HARNESS_PYTHON      python interpreter with venv (default: python3)
set -euo pipefail

readonly MEMORY_VERSION="2026.8.31"
readonly EVERYTHING_VERSION="2026.8.31"
readonly MCP_SDK_VERSION="2.3.0"
readonly VERSION="${MEMORY_VERSION}-${EVERYTHING_VERSION}-py${MCP_SDK_VERSION}"

cache="${HARNESS_CACHE_DIR:-$HOME/.cache/harness}/mcp-$VERSION"
node_dir="$cache/node"
venv="$cache/venv"
memory_bin="$node_dir/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
everything_bin="$node_dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

paths() {
  local missing=0
  [ -f "$memory_bin" ] || missing=1
  [ -f "$everything_bin" ] || missing=1
  [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp' 2>/dev/null || missing=1
  echo "MCP_MEMORY_BIN=$memory_bin"
  echo "MCP_EVERYTHING_BIN=$everything_bin"
  echo "MCP_PYTHON=$venv/bin/python"
  return "$missing"
}

ensure() {
  if [ ! -f "$memory_bin" ] || [ ! -f "$everything_bin" ]; then
    mkdir -p "$node_dir"
    nice -n 10 npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-memory@$MEMORY_VERSION" \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2
  fi
  if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp' 2>/dev/null; }; then
    "${HARNESS_PYTHON:-python3}" -m venv "$venv" >&2
    nice -n 10 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "mcp==$MCP_SDK_VERSION" >&2
  fi
  paths
}

case "${1:-}" in
  ensure) ensure ;;
  paths) paths ;;
  *) echo "usage: $0 ensure|paths" >&2; exit 2 ;;
esac
