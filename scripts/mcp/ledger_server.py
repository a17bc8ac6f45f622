#!/usr/bin/env python3
"""A ledger of expenses as an MCP server on PyPI's `mcp` SDK (2.x, stdio):
the Python server of the live MCP spec (specs/mcp_memory.toml). The
ledger lives in memory, one per process, so each episode's server starts
empty. Installed with scripts/mcp-servers.sh."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("ledger")
entries: list[dict] = []


@server.tool()
def add_expense(item: str, amount: float) -> dict:
    """Records an expense: what was bought and its price in roubles."""
    entries.append({"item": item, "amount": amount})
    return {"entries": len(entries), "total": sum(e["amount"] for e in entries)}


@server.tool()
def list_expenses() -> dict:
    """Every expense recorded, and their total."""
    return {"entries": entries, "total": sum(e["amount"] for e in entries)}


if __name__ == "__main__":
    server.run("stdio")
