"""The Discord adapter's settings (read like every setting: environment, ``.env``,
``threadline.toml``), and the token checked once before anything connects."""

from __future__ import annotations

from pydantic import SecretStr, field_validator

from bot.config import SettingsBase, secret, url_setting
from bot.errors import ConfigError


class DiscordSettings(SettingsBase):
    discord_token: SecretStr | None = secret("DISCORD_TOKEN")
    discord_api_base: str | None = secret("DISCORD_API_BASE")
    discord_gateway_url: str | None = secret("DISCORD_GATEWAY_URL")

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
