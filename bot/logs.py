"""Logging set-up that never lets a configured secret reach the output."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from bot.config import Settings


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


def secret_values(settings: Settings) -> list[str]:
    values = [
        settings.openai_api_key,
        settings.slack_bot_token,
        settings.slack_app_token,
        settings.slack_signing_secret,
        settings.discord_token,
    ]
    return [v.get_secret_value() for v in values if v is not None]


def configure_logging(settings: Settings) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets(secret_values(settings)))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    for noisy in ("aiohttp.access", "httpx2", "httpcore2", "openai", "apscheduler"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
