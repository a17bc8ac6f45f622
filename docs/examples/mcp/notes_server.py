#!/usr/bin/env python3
"""A notes server over MCP's stdio transport (revision 2025-11-25), with no
SDK: one JSON-RPC message per line. Tools: `add_note`, `list_notes`, `clear`.
The docs' example spec (docs/examples/specs/mcp.toml) runs it."""

import json
import sys

notes = []
schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
tools = [
    {"name": "add_note", "description": "Keeps a note.", "inputSchema": schema},
    {"name": "list_notes", "description": "Every note kept.", "inputSchema": {"type": "object"}},
    {"name": "clear", "description": "Forgets every note.", "inputSchema": {"type": "object"}},
]


def run(name, args):
    if name == "add_note":
        notes.append(str(args.get("text", "")))
    elif name == "clear":
        notes.clear()
    elif name != "list_notes":
        return {"content": [{"type": "text", "text": "no tool " + name}], "isError": True}
    return {"content": [{"type": "text", "text": json.dumps(notes)}], "structuredContent": {"notes": notes}}


for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "notes", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "tools/call":
        result = run(params.get("name"), params.get("arguments") or {})
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
