"""What a platform adapter builds with, besides the port: the clock, owned background tasks,
per-key order (a thread's messages prepared one at a time), the prose mapping both chat
markdowns need, file names and kinds, URL origins, the bot's private folders, text made valid
Unicode, and why a server could not be reached (in plain words, for ``threadline doctor``).
Platform adapters import
from ``bot.api`` only (and ``bot.config``, ``bot.errors``): ``tests/test_layers.py`` holds them
to it, so what they depend on is listed here, once."""

from __future__ import annotations

from bot.files.intake import MAX_FILES
from bot.files.kinds import size_words, sniff
from bot.files.names import safe_name
from bot.infra.clock import Clock, SystemClock
from bot.infra.tasks import TaskSet
from bot.infra.text import valid_text
from bot.llm.unreachable import unreachable_reason
from bot.present.markdown import map_prose
from bot.storage.private import private_dir
from bot.thread.line import ThreadLocks
from bot.tools.origins import origin_of

__all__ = [
    "MAX_FILES",
    "Clock",
    "SystemClock",
    "TaskSet",
    "ThreadLocks",
    "map_prose",
    "origin_of",
    "private_dir",
    "safe_name",
    "size_words",
    "sniff",
    "unreachable_reason",
    "valid_text",
]
