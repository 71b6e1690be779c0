"""The Slack adapter's settings (read like every setting: environment, ``.env``,
``threadline.toml``), checked once when the adapter is built.

Socket Mode when ``SLACK_APP_TOKEN`` is set; otherwise HTTP mode, where Slack posts events and
clicks to ``POST /slack/events`` and ``SLACK_SIGNING_SECRET`` is required. ``SLACK_API_URL``
replaces the Web API base for every call, the one that opens the Socket Mode connection too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field, SecretStr, field_validator

from bot.config import SettingsBase, secret, url_setting
from bot.errors import ConfigError

SLACK_API = "https://slack.com/api/"
EVENTS_PATH = "/slack/events"
COMMAND = "/threadline"
"""The slash command in the manifests (events, clicks and commands share ``EVENTS_PATH``)."""


class SlackSettings(SettingsBase):
    slack_bot_token: SecretStr | None = secret("SLACK_BOT_TOKEN")
    slack_app_token: SecretStr | None = secret("SLACK_APP_TOKEN")
    slack_signing_secret: SecretStr | None = secret("SLACK_SIGNING_SECRET")
    slack_api_url: str | None = secret("SLACK_API_URL")
    slack_edits_per_minute: float = Field(default=48.0, gt=0)
    """``chat.update`` calls a minute for the whole workspace (Slack's Tier 3 is about 50),
    shared by all streams; a little under 50 leaves room for the edit kept for a final text."""
    slack_min_edit_interval: float = Field(default=1.0, ge=0)
    """Seconds between two edits of one Slack message."""
    slack_posts_per_minute: float = Field(default=45.0, gt=0)
    """``chat.postMessage`` calls a minute in one channel (Slack allows about one a second, with
    short bursts), shared by every reply there: first words, finals posted anew, control
    messages. One worker posts at most four in any four of these intervals (four at once after
    a quiet spell); several workers share the pace through the database."""

    slack_streaming: Literal["auto", "native", "edit"] = "auto"
    """How replies stream: ``native`` with ``chat.startStream`` (falling back to edits on any
    streaming error), ``edit`` by editing one message, ``auto`` native when a stream can start
    at once and edits otherwise."""
    slack_stream_starts_per_minute: float = Field(default=15.0, gt=0)
    """``chat.startStream``/``chat.stopStream`` calls a minute each (Tier 2, about 20)."""
    slack_stream_appends_per_minute: float = Field(default=80.0, gt=0)
    """``chat.appendStream`` calls a minute for the workspace (Tier 4, about 100)."""
    slack_stream_max_age: float = Field(default=240.0, gt=0)
    """Seconds after which a streamed reply rolls over to a new stream (Slack stops taking
    appends about five minutes after a stream starts)."""

    slack_suggested_prompts: list[str] = Field(default_factory=list, max_length=4)
    """The prompts Slack suggests when someone starts an assistant thread with the bot (at
    most four, each sent as written when clicked); empty: "What can you do?" and prompts for
    the tools the bot has."""

    @field_validator("slack_api_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return url_setting(value)

    @property
    def configured(self) -> bool:
        """A bot token is set: Threadline connects to Slack."""
        return self.slack_bot_token is not None


@dataclass(frozen=True, slots=True)
class SlackConfig:
    bot_token: SecretStr = field(repr=False)
    app_token: SecretStr | None = field(repr=False)
    signing_secret: SecretStr | None = field(repr=False)
    api_url: str
    """The Web API base, ending with a slash."""
    edits_per_minute: float
    min_edit_interval: float
    posts_per_minute: float = 45.0
    streaming: Literal["auto", "native", "edit"] = "auto"
    stream_starts_per_minute: float = 15.0
    stream_appends_per_minute: float = 80.0
    stream_max_age: float = 240.0
    suggested_prompts: tuple[str, ...] = ()

    @property
    def mode(self) -> Literal["socket", "http"]:
        return "socket" if self.app_token is not None else "http"

    @classmethod
    def from_settings(cls, settings: SlackSettings) -> SlackConfig:
        bot = _present(settings.slack_bot_token)
        app = _present(settings.slack_app_token)
        secret = _present(settings.slack_signing_secret)
        if bot is None:
            raise ConfigError("SLACK_BOT_TOKEN", "is required to connect to Slack")
        if bot.get_secret_value().startswith("xapp-"):
            raise ConfigError(
                "SLACK_BOT_TOKEN",
                "holds an app-level token (xapp-…); use the Bot User OAuth Token (xoxb-…) "
                "and put the app-level token in SLACK_APP_TOKEN",
            )
        if not bot.get_secret_value().startswith("xoxb-"):
            raise ConfigError(
                "SLACK_BOT_TOKEN",
                "must be the Bot User OAuth Token, which starts with xoxb- (OAuth & Permissions "
                "→ Bot User OAuth Token); a user token (xoxp-) or another value will not work",
            )
        if app is not None and not app.get_secret_value().startswith("xapp-"):
            raise ConfigError(
                "SLACK_APP_TOKEN",
                "must be an app-level token (xapp-…) with the connections:write scope "
                "(Basic Information → App-Level Tokens)",
            )
        if app is None and secret is None:
            raise ConfigError(
                "SLACK_SIGNING_SECRET",
                "is required in HTTP mode (SLACK_APP_TOKEN is not set): copy it from Basic "
                "Information → App Credentials, or set SLACK_APP_TOKEN to use Socket Mode",
            )
        base = settings.slack_api_url or SLACK_API
        return cls(
            bot_token=bot,
            app_token=app,
            signing_secret=secret,
            api_url=base if base.endswith("/") else base + "/",
            edits_per_minute=settings.slack_edits_per_minute,
            min_edit_interval=settings.slack_min_edit_interval,
            posts_per_minute=settings.slack_posts_per_minute,
            streaming=settings.slack_streaming,
            stream_starts_per_minute=settings.slack_stream_starts_per_minute,
            stream_appends_per_minute=settings.slack_stream_appends_per_minute,
            stream_max_age=settings.slack_stream_max_age,
            suggested_prompts=tuple(
                p.strip() for p in settings.slack_suggested_prompts if p.strip()
            ),
        )


def _present(value: SecretStr | None) -> SecretStr | None:
    """An empty variable counts as unset."""
    if value is None or not value.get_secret_value().strip():
        return None
    return SecretStr(value.get_secret_value().strip())
