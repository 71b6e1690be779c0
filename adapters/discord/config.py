"""The Discord adapter's settings (read like every setting: environment, ``.env``,
``threadline.toml``), and the token checked once before anything connects.

Sharding: ``THREADLINE_DISCORD_SHARD_COUNT`` splits the bot's servers into that many shards;
``THREADLINE_DISCORD_SHARD_IDS`` (``0,1`` or ``0-3``) names the ones this process connects, so
several processes share them (unset: all of them). Neither set: one connection, no sharding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field, SecretStr, field_validator

from bot.config import SettingsBase, secret, url_setting
from bot.errors import ConfigError

_SHARD_IDS = re.compile(r"^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$")


@dataclass(frozen=True, slots=True)
class Shards:
    """The shards this process connects: ``ids`` of ``count``."""

    ids: tuple[int, ...]
    count: int

    def describe(self) -> str:
        ids = ", ".join(str(i) for i in self.ids)
        return f"shard{'s' if len(self.ids) > 1 else ''} {ids} of {self.count}"


class DiscordSettings(SettingsBase):
    discord_token: SecretStr | None = secret("DISCORD_TOKEN")
    discord_api_base: str | None = secret("DISCORD_API_BASE")
    discord_gateway_url: str | None = secret("DISCORD_GATEWAY_URL")
    discord_shard_count: int | None = Field(default=None, ge=1)
    """How many shards the bot's servers are split into (for all processes together)."""
    discord_shard_ids: str | None = None
    """The shards this process connects: ``0,1`` or ``0-3``; unset: all of them."""

    @field_validator("discord_shard_ids")
    @classmethod
    def _shard_ids(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not _SHARD_IDS.match(value):
            raise ValueError("must be shard numbers such as 0,1 or a range such as 0-3")
        return value

    @field_validator("discord_api_base", "discord_gateway_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return url_setting(value)

    @property
    def configured(self) -> bool:
        """A token is set: Threadline connects to Discord."""
        return self.discord_token is not None

    def token(self) -> str:
        """The bot token, checked: a configuration error says what is wrong with it."""
        if self.discord_token is None:
            raise ConfigError("DISCORD_TOKEN", "is not set")
        token = self.discord_token.get_secret_value().strip()
        if not token or any(c.isspace() for c in token):
            raise ConfigError("DISCORD_TOKEN", "must be the bot token alone, without spaces")
        if token.lower().startswith("bot "):
            raise ConfigError("DISCORD_TOKEN", "give the token without the 'Bot ' prefix")
        return token

    def shards(self) -> Shards | None:
        """The shards this process connects (None: unsharded), checked against each other."""
        count, ids = self.discord_shard_count, self.discord_shard_ids
        if ids is None:
            return None if count is None else Shards(tuple(range(count)), count)
        if count is None:
            raise ConfigError(
                "THREADLINE_DISCORD_SHARD_IDS",
                "needs THREADLINE_DISCORD_SHARD_COUNT (the shards of all processes together)",
            )
        found: list[int] = []
        for part in ids.split(","):
            first, _, last = part.partition("-")
            found.extend(range(int(first), int(last or first) + 1))
        if len(set(found)) != len(found) or not found:
            raise ConfigError("THREADLINE_DISCORD_SHARD_IDS", f"names a shard twice ({ids})")
        if max(found) >= count:
            raise ConfigError(
                "THREADLINE_DISCORD_SHARD_IDS",
                f"names shard {max(found)}, but shards are numbered 0 to {count - 1} "
                f"(THREADLINE_DISCORD_SHARD_COUNT={count})",
            )
        return Shards(tuple(sorted(found)), count)
