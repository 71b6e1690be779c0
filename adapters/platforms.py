"""The chat platforms' own settings, read together: which platforms are configured.

Each adapter owns its settings model (``adapters/slack/config.py``, ``adapters/discord/config.py``);
none of them imports its SDK, so reading them costs nothing when a platform is not used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adapters.discord.config import DiscordSettings
from adapters.slack.config import SlackSettings
from bot.config import Settings, SettingsBase, check_config_file, load


@dataclass(frozen=True, slots=True)
class Platforms:
    slack: SlackSettings = field(default_factory=lambda: SlackSettings(_env_file=None))
    discord: DiscordSettings = field(default_factory=lambda: DiscordSettings(_env_file=None))

    @classmethod
    def load(cls) -> Platforms:
        """From the environment, ``.env`` and ``threadline.toml`` (a bad value, or a key of the
        file that no settings model knows: ConfigError)."""
        check_config_file(Settings, SlackSettings, DiscordSettings)
        return cls(load(SlackSettings), load(DiscordSettings))

    @property
    def configured(self) -> bool:
        return self.slack.configured or self.discord.configured

    def settings(self) -> tuple[SettingsBase, ...]:
        return (self.slack, self.discord)
