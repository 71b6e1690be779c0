"""Tools the model can call: typed async functions with a schema derived from the signature."""

from bot.tools.base import Tool, ToolContext, ToolError, tool
from bot.tools.registry import ToolRegistry

__all__ = ["Tool", "ToolContext", "ToolError", "ToolRegistry", "tool"]
