"""MCP servers as toolkits: each configured server's tools are offered as ``<server>__<tool>``."""
