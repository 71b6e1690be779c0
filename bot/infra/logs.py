"""Logging set-up that never lets a configured secret reach the output."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from bot.config import Settings, SettingsBase
from bot.mcp.endpoint import secrets_of
from bot.tools.settings import tool_secrets


class RedactSecrets(logging.Filter):
    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if self._secrets:
            record.msg = self.redact(record.getMessage())
            record.args = None
        return True


def secret_values(settings: Settings, *more: SettingsBase) -> list[str]:
    """Every secret of ``settings`` and ``more`` (the adapters' settings), and every value an
    MCP server or a tool (a custom HTTP tool, web search) reads from the environment."""
    secrets = [v for s in (settings, *more) for v in s.secrets()]
    for server in settings.mcp_servers.values():
        secrets.extend(secrets_of(server, os.environ))
    secrets.extend(tool_secrets(settings.custom_tools, settings.web_search, os.environ))
    return secrets


def configure_logging(settings: Settings, *more: SettingsBase) -> None:
    """Log to stderr at the configured level, with every secret redacted."""
    secrets = secret_values(settings, *more)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    # discord.gateway logs whole payloads (interaction tokens) at DEBUG
    for noisy in (
        "aiohttp.access",
        "httpx2",
        "httpcore2",
        "openai",
        "apscheduler",
        "mcp",
        "discord.gateway",
    ):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
