"""Settings from the environment, ``.env`` and an optional ``threadline.toml``.

Secrets keep their standard names (``OPENAI_API_KEY``, ``SLACK_BOT_TOKEN``…); everything else
is ``THREADLINE_*``. The TOML file holds the same settings in lower case without the prefix
(``model = "gpt-4o-mini"``), plus per-tool sections later issues add.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bot.errors import ConfigError


class ApproversSettings(BaseModel):
    """Who may decide an approval (any of them)."""

    model_config = ConfigDict(extra="forbid")
    requester: bool = True
    """The person whose message started the run."""
    users: list[str] = Field(default_factory=list)
    """Platform user ids, as Threadline names them (``slack:U123``, ``discord:42``)."""
    roles: list[str] = Field(default_factory=list)
    """Discord roles (``discord:role:123``) and Slack user groups (``slack:group:S123``)."""
    anyone: bool = False


class ToolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    approval: Literal["always", "ask", "never"] | None = None
    approvers: ApproversSettings | None = None
    offer_always: bool | None = None
    """Show an "Always allow here" button (default: for tools whose approval is ``ask``)."""


class ChannelSettings(BaseModel):
    """Settings for the threads whose key starts with this section's name."""

    model_config = ConfigDict(extra="forbid")
    approvers: ApproversSettings | None = None
    tools: dict[str, ToolSettings] = Field(default_factory=dict)


def _secret(name: str) -> Any:
    return Field(default=None, validation_alias=AliasChoices(name, name.lower()))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="THREADLINE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    # --- model ---
    openai_api_key: SecretStr | None = _secret("OPENAI_API_KEY")
    openai_base_url: str | None = _secret("OPENAI_BASE_URL")
    model: str = "gpt-4o-mini"
    context_window: int = Field(default=128_000, ge=1_000)
    max_output_tokens: int | None = Field(default=None, ge=1)
    model_timeout_s: float = Field(default=120.0, gt=0)
    model_max_retries: int = Field(default=4, ge=0, le=10)
    price_input_per_mtok: float | None = Field(default=None, ge=0)
    """USD per million prompt tokens; with the output price, enables cost tracking."""
    price_output_per_mtok: float | None = Field(default=None, ge=0)
    system_prompt: str | None = None
    demo_chunk_delay_s: float = Field(default=0.03, ge=0, le=5)
    """The offline demo model's pause between streamed pieces."""

    # --- engine ---
    max_turns: int = Field(default=25, ge=1, le=500)
    max_input_chars: int = Field(default=20_000, ge=100)
    """Longer user messages are cut to this many characters, and the thread is told."""
    during_run: Literal["steer", "queue"] = "steer"
    """A message arriving during a run: shown to the model at its next call, or queued."""
    compact_at: float = Field(default=0.8, gt=0.1, le=1.0)
    """Compact a thread when its estimated tokens pass this share of the context window."""
    keep_recent_turns: int = Field(default=4, ge=1, le=100)
    """User turns kept verbatim when a thread is compacted."""
    run_max_tokens: int | None = Field(default=None, ge=1)
    run_max_cost_usd: float | None = Field(default=None, gt=0)
    day_max_tokens: int | None = Field(default=None, ge=1)
    """Per thread and UTC day."""
    day_max_cost_usd: float | None = Field(default=None, gt=0)

    # --- approvals and tools ---
    approval_ttl_s: float = Field(default=1800.0, gt=0)
    workspace_tools: bool = True
    """Give each thread a workspace directory and the tools to use it (commands ask first)."""
    tools: dict[str, ToolSettings] = Field(default_factory=dict)
    """Per tool (``threadline.toml``: ``[tools.run_command]``)."""
    channels: dict[str, ChannelSettings] = Field(default_factory=dict)
    """Per channel or thread-key prefix (``[channels."slack:T1:C1"]``)."""

    # --- runtime ---
    data_dir: Path = Path(".threadline")
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=0, le=65535)
    log_level: str = "INFO"
    playground: bool | None = None
    """Serve the local playground. Default: on when no platform token is set."""

    # --- platforms ---
    slack_bot_token: SecretStr | None = _secret("SLACK_BOT_TOKEN")
    slack_app_token: SecretStr | None = _secret("SLACK_APP_TOKEN")
    slack_signing_secret: SecretStr | None = _secret("SLACK_SIGNING_SECRET")
    slack_api_url: str | None = _secret("SLACK_API_URL")
    slack_edits_per_minute: float = Field(default=50.0, gt=0)
    """``chat.update`` calls a minute for the whole workspace (Slack's Tier 3), shared by all streams."""
    slack_min_edit_interval: float = Field(default=1.0, ge=0)
    """Seconds between two edits of one Slack message."""
    discord_token: SecretStr | None = _secret("DISCORD_TOKEN")
    discord_api_base: str | None = _secret("DISCORD_API_BASE")
    discord_gateway_url: str | None = _secret("DISCORD_GATEWAY_URL")

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        value = value.upper()
        if value not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR")
        return value

    @field_validator("openai_base_url", "slack_api_url", "discord_api_base", "discord_gateway_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("http://", "https://", "ws://", "wss://")):
            raise ValueError("must be a URL starting with http:// or https://")
        return value.rstrip("/")

    @property
    def uses_demo_model(self) -> bool:
        return self.openai_api_key is None and self.openai_base_url is None

    @property
    def playground_enabled(self) -> bool:
        if self.playground is not None:
            return self.playground
        return self.slack_bot_token is None and self.discord_token is None

    def channel(self, key: str) -> ChannelSettings | None:
        """The most specific channel section whose name starts ``key``."""
        best = max((p for p in self.channels if key.startswith(p)), key=len, default=None)
        return self.channels[best] if best is not None else None

    @property
    def database_path(self) -> Path:
        return self.data_dir / "threadline.sqlite3"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = Path(os.environ.get("THREADLINE_CONFIG", "threadline.toml"))
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings, dotenv_settings]
        if toml_path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
        return tuple(sources)


_ENV_NAMES = {
    "openai_api_key": "OPENAI_API_KEY",
    "openai_base_url": "OPENAI_BASE_URL",
    "slack_bot_token": "SLACK_BOT_TOKEN",
    "slack_app_token": "SLACK_APP_TOKEN",
    "slack_signing_secret": "SLACK_SIGNING_SECRET",
    "slack_api_url": "SLACK_API_URL",
    "discord_token": "DISCORD_TOKEN",
    "discord_api_base": "DISCORD_API_BASE",
    "discord_gateway_url": "DISCORD_GATEWAY_URL",
}


def setting_name(field: str) -> str:
    """The name an operator writes for a settings field."""
    return _ENV_NAMES.get(field, f"THREADLINE_{field.upper()}")


def load_settings(**overrides: Any) -> Settings:
    """Read the settings; invalid ones raise a :class:`ConfigError` naming the first culprit."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "configuration"
        raise ConfigError(setting_name(field), first["msg"]) from None
    except (ValueError, OSError) as exc:  # unreadable TOML, bad .env
        raise ConfigError(os.environ.get("THREADLINE_CONFIG", "threadline.toml"), str(exc)) from None
