"""The only place that imports the official MCP SDK (``mcp``, ``mcp_types``) and its HTTP
client (``httpx2``); the rest of :mod:`bot.mcp` works with our own types."""
