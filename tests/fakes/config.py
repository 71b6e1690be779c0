"""Settings for tests, written as one set of values as an operator would: the core's go to
:class:`bot.config.Settings`, ``slack_*`` and ``discord_*`` to the adapters' own models."""

from __future__ import annotations

from typing import Any

from adapters.discord.config import DiscordSettings
from adapters.platforms import Platforms
from adapters.slack.config import SlackSettings
from bot.config import Settings


def configure(**values: Any) -> tuple[Settings, Platforms]:
    slack = {k: v for k, v in values.items() if k.startswith("slack_")}
    discord = {k: v for k, v in values.items() if k.startswith("discord_")}
    core = {k: v for k, v in values.items() if k not in slack and k not in discord}
    env_file = {"_env_file": values["_env_file"]} if "_env_file" in values else {}
    platforms = Platforms(
        SlackSettings(**env_file, **slack), DiscordSettings(**env_file, **discord)
    )
    return Settings(**core), platforms
