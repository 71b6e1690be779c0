"""What a platform adapter needs to show a form an MCP server asks for and send its answer:
the form waiting (its message and fields, each with its kind, choices and limits) and what
sending it did (a note, and what is wrong field by field)."""

from __future__ import annotations

from bot.mcp.form_schema import Field, Option
from bot.mcp.forms import FormReply
from bot.mcp.pending import PendingForm

__all__ = ["Field", "FormReply", "Option", "PendingForm"]
