"""Settings from the environment, ``.env`` and an optional ``threadline.toml``.

Secrets keep their standard names (``OPENAI_API_KEY``…); everything else is ``THREADLINE_*``.
The TOML file holds the same settings in lower case without the prefix (``model =
"gpt-4o-mini"``), plus per-tool and per-channel sections. :class:`Settings` is what the core
uses; each adapter has its own model on :class:`SettingsBase`, read from the same sources
(``adapters/slack/config.py``, ``adapters/discord/config.py``).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dotenv import dotenv_values
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bot.errors import ConfigError
from bot.policy import keys
from bot.tools.settings import CustomToolSettings, FetchUrlOptions, Gating, WebSearchOptions


class ApproversSettings(BaseModel):
    """Who may decide an approval (any of them)."""

    model_config = ConfigDict(extra="forbid")
    requester: bool = True
    """The person whose message the call answers."""
    admins: bool = False
    """The people listed in ``[access] admins``."""
    users: list[str] = Field(default_factory=list)
    """Platform user ids, as Threadline names them (``slack:U123``, ``discord:42``)."""
    roles: list[str] = Field(default_factory=list)
    """Discord roles (``discord:role:123``) and Slack user groups (``slack:group:S123``)."""
    anyone: bool = False
    escalate_to: list[str] = Field(default_factory=list)
    """Who may decide too once ``escalate_after`` has passed undecided: user ids and roles or
    user groups (``slack:U123``, ``slack:group:S123``, ``discord:role:123``); they are told
    by a direct message, once."""
    escalate_after: float | None = Field(default=None, gt=0)
    """Seconds (or ``"30m"``, ``"2h"``) after the request when it escalates to ``escalate_to``;
    it must come before the request expires (``approval_ttl_s``)."""
    notify: bool = True
    """Tell the approvers by a direct message, with a link to the card, when the person who
    asked may not decide themselves."""

    @field_validator("escalate_after", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return duration_s(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _escalation(self) -> ApproversSettings:
        if bool(self.escalate_to) != (self.escalate_after is not None):
            raise ValueError("escalate_to and escalate_after go together: give both or neither")
        return self


DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration_s(value: str) -> float:
    """Seconds in a duration written ``90``, ``90s``, ``30m``, ``2h`` or ``1d``."""
    found = DURATION.match(value)
    if found is None:
        raise ValueError(f"{value[:40]!r} is not a duration (such as 90s, 30m, 2h or 1d)")
    return float(found[1]) * UNIT_S[found[2] or "s"]


class PeopleSettings(BaseModel):
    """Who, by user id and by role: an allow list (empty: everyone) and a deny list (wins)."""

    model_config = ConfigDict(extra="forbid")
    users: list[str] = Field(default_factory=list)
    """Platform user ids as Threadline names them (``slack:U123``, ``discord:42``)."""
    roles: list[str] = Field(default_factory=list)
    """Discord roles (``discord:role:123``) and Slack user groups (``slack:group:S123``)."""
    deny_users: list[str] = Field(default_factory=list)
    deny_roles: list[str] = Field(default_factory=list)


class AccessSettings(PeopleSettings):
    """Who may talk to the bot at all, and where (``[access]`` in ``threadline.toml``)."""

    channels: list[str] = Field(default_factory=list)
    """Where the bot answers: the first parts of thread keys (``slack:T1:C1``, ``discord:123``),
    compared part by part; empty: everywhere."""
    deny_channels: list[str] = Field(default_factory=list)
    dms: Literal["open", "allowlist", "closed"] = "open"
    """Direct messages: from anyone allowed above, only from people listed by id or role
    (``users``, ``roles``, ``admins``), or not at all."""
    admins: list[str] = Field(default_factory=list)
    """User ids that approver settings can name with ``admins = true``; they may always talk."""


class ToolSettings(PeopleSettings):
    """Per tool: when it asks, who may decide, and who may have the bot use it at all (the
    ``users``/``roles`` lists: people whose requests may call it; empty: everyone)."""

    approval: Literal["always", "ask", "never"] | None = None
    approvers: ApproversSettings | None = None
    offer_always: bool | None = None
    """Show an "Always allow here" button (default: for ``ask`` tools that do not run programs)."""
    network: bool | None = None
    """Let a sandboxed command reach the network (default: no network)."""


class FetchUrlSettings(ToolSettings, FetchUrlOptions):
    """``[tools.fetch_url]``: its approval settings and what it may reach."""


class WebSearchSettings(ToolSettings, WebSearchOptions):
    """``[tools.web_search]``: its approval settings and its provider."""


TOOL_SECTIONS: dict[str, type[ToolSettings]] = {
    "fetch_url": FetchUrlSettings,
    "web_search": WebSearchSettings,
}
"""Tools whose ``[tools.NAME]`` section holds settings of their own."""


TOOL_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}\*?$|^\*$")
"""A tool name in ``offer_tools``/``hide_tools``; a trailing ``*`` matches a prefix (``tickets__*``)."""


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
"""The values of ``reasoning_effort`` the Chat Completions servers we know take."""


class SamplingSettings(BaseModel):
    """How the model samples its answers; what is left out goes to the next layer down (a
    channel over a model's own table over the global settings), and unset everywhere it is not
    sent at all: the server's own default applies."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    temperature: float | None = Field(default=None, ge=0)
    """Randomness of the answers (0: the most likely words; OpenAI takes up to 2)."""
    top_p: float | None = Field(default=None, ge=0, le=1)
    """Nucleus sampling: only the words making up this share of the probability."""
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    """Asks the server for repeatable answers (where it supports it)."""
    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks before it answers; sent only when set."""


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class ModelSettings(SamplingSettings):
    """One model's own settings (``[per_model."NAME"]``, NAME as sent to the server): they
    apply whenever a thread uses that model, over the global settings (a channel's section
    still wins over them); and its own server and key, if it has them: a thread or channel
    that uses this model name is answered there, other names keep ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY``."""

    context_window: int | None = Field(default=None, ge=1_000)
    """The model's context window, in tokens."""
    max_output_tokens: int | None = Field(default=None, ge=1)
    """Cap on each of its answers, in tokens (less when the prompt leaves less room)."""
    text_tool_calls: bool | None = None
    """Read the tool calls it writes into its text (default: ``THREADLINE_TEXT_TOOL_CALLS``)."""
    base_url: str | None = None
    """Its OpenAI-compatible server (default: ``OPENAI_BASE_URL``, or OpenAI's)."""
    api_key_env: str | None = None
    """The environment variable holding its key (default: ``OPENAI_API_KEY`` when the server is
    the default one, no key otherwise: ``OPENAI_API_KEY`` never goes to another server)."""
    openai_api: Literal["chat", "responses"] | None = None
    """Its API: Chat Completions or OpenAI's Responses API (default: ``THREADLINE_OPENAI_API``)."""

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be a URL starting with http:// or https://")
        return None if value is None else value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.match(value):
            raise ValueError(
                f"{value[:60]!r} is not the name of an environment variable (letters, digits, _)"
            )
        return value

    @property
    def routed(self) -> bool:
        """Whether the model has a server or key of its own."""
        return (
            self.base_url is not None or self.api_key_env is not None or self.openai_api is not None
        )


class ChannelSettings(SamplingSettings):
    """Settings for the threads whose key begins with the parts of this section's name
    (``slack:T1:C1`` covers ``slack:T1:C1:…``, not ``slack:T1:C10:…``). Everything left out is
    the global setting; the most specific section (the one naming the most parts) applies."""

    approvers: ApproversSettings | None = None
    tools: dict[str, ToolSettings] = Field(default_factory=dict)
    mcp_servers: list[str] | None = None
    """The MCP servers whose tools these threads are offered (default: every one)."""
    model: str | None = Field(default=None, min_length=1, max_length=200)
    models: list[str] | None = None
    """The models ``/threadline model NAME`` may choose here (default: the global ``models``)."""
    system_prompt: str | None = Field(default=None, min_length=1, max_length=20_000)
    system_prompt_mode: Literal["add", "replace"] = "add"
    """``add``: the channel's prompt follows the global one; ``replace``: it stands alone."""
    offer_tools: list[str] | None = None
    """Only these tools are offered (names; ``tickets__*`` for a prefix); default: all."""
    hide_tools: list[str] = Field(default_factory=list)
    """These tools are not offered (same forms), whatever ``offer_tools`` says."""
    max_turns: int | None = Field(default=None, ge=1, le=500)
    max_output_tokens: int | None = Field(default=None, ge=1)
    context_window: int | None = Field(default=None, ge=1_000)
    run_max_tokens: int | None = Field(default=None, ge=1)
    run_max_cost_usd: float | None = Field(default=None, gt=0)
    day_max_tokens: int | None = Field(default=None, ge=1)
    day_max_cost_usd: float | None = Field(default=None, gt=0)
    during_run: Literal["steer", "queue"] | None = None
    thread_replies: Literal["all", "mentions"] | None = None
    """In a thread the bot is in: answer every message, or only those that mention it."""
    timezone: str | None = None
    """The channel's time zone (an IANA name): the model is told the time there too."""

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        return None if value is None else zone_name(value)

    @field_validator("offer_tools", "hide_tools")
    @classmethod
    def _tool_names(cls, names: list[str] | None) -> list[str] | None:
        for name in names or ():
            if not TOOL_PATTERN.match(name):
                raise ValueError(
                    f"{name!r} is not a tool name (1-64 letters, digits, _ or -, optionally ending in *)"
                )
        return names

    @field_validator("model")
    @classmethod
    def _model_name(cls, value: str | None) -> str | None:
        return None if value is None else model_name(value)

    @field_validator("models")
    @classmethod
    def _model_names(cls, values: list[str] | None) -> list[str] | None:
        return None if values is None else [model_name(v) for v in values]


def zone_name(value: str) -> str:
    """An IANA time zone's name, checked."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {value!r}: use an IANA name such as UTC or Europe/Paris"
        ) from None
    return value


MODEL_NAME = re.compile(r"^[^\s\x00-\x1f\x7f]{1,200}$")


def model_name(value: str) -> str:
    """A model name as sent to the server: 1-200 characters, no spaces or control characters."""
    value = value.strip()
    if not MODEL_NAME.match(value):
        raise ValueError(f"{value[:60]!r} is not a model name (1-200 characters without spaces)")
    return value


PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}`` in an MCP server's ``env`` and ``headers`` values: read from the environment."""
MCP_SERVER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,60}$")
"""A server's name is the prefix of its tools' names (``tickets__lookup``, at most 64)."""


class McpOAuthSettings(BaseModel):
    """How the bot signs in to an MCP server with OAuth 2.1 (``[mcp_servers.NAME.oauth]``):
    the server's authorization server is found from its metadata; the client is registered
    dynamically unless ``client_id`` (or ``client_metadata_url``) is given."""

    model_config = ConfigDict(extra="forbid")
    sign_in: Literal["shared", "per_person"] = "shared"
    """``shared``: one sign-in for everyone, made by the operator (``threadline mcp login
    NAME``); ``per_person``: whoever's run calls the server's tool signs in the first time."""
    grant: Literal["authorization_code", "client_credentials", "enterprise"] = "authorization_code"
    """``client_credentials``: the bot signs in as itself with ``client_id`` and
    ``client_secret`` (or ``private_key``), no person involved (shared only). ``enterprise``
    (SEP-990, enterprise-managed authorization): ``id_token`` is exchanged at the identity
    provider's ``idp_token_endpoint`` (RFC 8693) for an identity assertion grant, presented
    to ``authorization_server`` with ``client_id`` and ``client_secret`` (RFC 7523)."""
    client_id: str | None = None
    """A client registered with the authorization server beforehand (else: registered
    dynamically, or ``client_metadata_url``)."""
    client_secret: str | None = None
    """The registered client's secret; write it as ``${ENV_VAR}``."""
    token_endpoint_auth_method: (
        Literal["none", "client_secret_basic", "client_secret_post"] | None
    ) = None
    """How a registered client proves itself at the token endpoint (default: basic with a
    secret, none without)."""
    private_key: str | None = None
    """``client_credentials`` with ``private_key_jwt``: the client's PEM private key, as
    ``${ENV_VAR}``."""
    signing_algorithm: str = "RS256"
    """The JWT algorithm ``private_key`` signs with (RS256, ES256…)."""
    client_metadata_url: str | None = None
    """An https URL of this client's metadata document, used as its client id where the
    authorization server supports client ID metadata documents."""
    scope: str | None = None
    """Scopes to ask for, space-separated, beside those the server names."""
    client_name: str = "Threadline"
    authorization_server: str | None = None
    """``enterprise``: the issuer of the MCP server's authorization server this client is
    registered with (configuration, never taken from the MCP server)."""
    idp_token_endpoint: str | None = None
    """``enterprise``: the identity provider's token endpoint (token exchange)."""
    idp_client_id: str | None = None
    """``enterprise``: the client id the bot has at the identity provider, if it needs one."""
    idp_client_secret: str | None = None
    """``enterprise``: that client's secret, as ``${ENV_VAR}``."""
    id_token: str | None = None
    """``enterprise``: the ID token the identity provider issued, as ``${ENV_VAR}``."""

    def problem(self) -> str | None:
        if self.grant == "enterprise":
            missing = [
                key
                for key in (
                    "client_id",
                    "client_secret",
                    "authorization_server",
                    "idp_token_endpoint",
                    "id_token",
                )
                if getattr(self, key) is None
            ]
            if missing:
                return f"the enterprise grant needs {', '.join(missing)}"
            if self.sign_in == "per_person":
                return "the enterprise grant signs in with one ID token: use sign_in = shared"
        if self.grant == "client_credentials":
            if self.client_id is None or (self.client_secret is None and self.private_key is None):
                return "client_credentials needs client_id and client_secret (or private_key)"
            if self.sign_in == "per_person":
                return "client_credentials signs the bot in, not a person: use sign_in = shared"
        if self.client_metadata_url is not None and not self.client_metadata_url.startswith(
            "https://"
        ):
            return "client_metadata_url must be an https:// URL"
        if self.client_secret is not None and self.client_id is None:
            return "client_secret goes with client_id"
        return None

    def placeholders(self) -> list[str]:
        kept = (self.client_secret, self.private_key, self.idp_client_secret, self.id_token)
        return [v for v in kept if v is not None]


class McpServerSettings(BaseModel):
    """One MCP server (``[mcp_servers.NAME]``): a command the bot starts (stdio) or a URL
    (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Added to the minimal environment the command gets (never the bot's own secrets)."""
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """For starting the server and for each call."""
    max_output_chars: int = Field(default=20_000, ge=100, le=1_000_000)
    form_timeout_s: float = Field(default=900.0, gt=0, le=86_400)
    """How long a form (or link) the server asks the run's person about waits for an answer;
    the call's own ``timeout_s`` waits meanwhile."""
    sampling_max_tokens: int = Field(default=1_000, ge=0, le=100_000)
    """The most tokens a model's answer the server asks for may use (its request approved on
    a card first); 0: every such request is refused."""
    enabled: bool = True
    gating: dict[str, Gating] = Field(default_factory=dict)
    """By the server's own tool name: when each tool is offered and what its calls turn on
    and off (``[mcp_servers.NAME.gating.TOOL]``; a tool without one is always offered)."""
    oauth: McpOAuthSettings | None = None
    """Sign in with OAuth 2.1 (``[mcp_servers.NAME.oauth]``); only with ``url``."""

    def problem(self) -> str | None:
        """What is wrong with the combination of fields, if anything."""
        if (self.command is None) == (self.url is None):
            return "give either command (a program the bot starts) or url (streamable HTTP)"
        if self.url is not None:
            if not self.url.startswith(("http://", "https://")):
                return "url must start with http:// or https://"
            if self.args or self.env or self.cwd is not None:
                return "args, env and cwd go with command, not with url"
        elif self.headers:
            return "headers go with url, not with command"
        elif self.oauth is not None:
            return "oauth goes with url, not with command"
        if self.oauth is not None:
            return self.oauth.problem()
        return None

    def resolved(self, values: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
        """``values`` with each ``${NAME}`` read from ``environ`` (a missing one: KeyError)."""
        return {k: PLACEHOLDER.sub(lambda m: environ[m.group(1)], v) for k, v in values.items()}

    def missing_variables(self, environ: Mapping[str, str]) -> list[str]:
        found = (
            m.group(1)
            for v in (*self.env.values(), *self.headers.values(), *self.oauth_placeholders())
            for m in PLACEHOLDER.finditer(v)
        )
        return sorted({name for name in found if name not in environ})

    def oauth_placeholders(self) -> list[str]:
        return self.oauth.placeholders() if self.oauth is not None else []


def secret(name: str) -> Any:
    """A field read from the environment variable ``name`` (``name.lower()`` in the TOML file)."""
    return Field(default=None, validation_alias=AliasChoices(name, name.lower()))


def url_setting(value: str | None) -> str | None:
    """An optional URL setting: empty is unset; anything but http(s)/ws(s) is refused."""
    if value is None or value == "":
        return None
    if not value.startswith(("http://", "https://", "ws://", "wss://")):
        raise ValueError("must be a URL starting with http:// or https://")
    return value.rstrip("/")


class SettingsBase(BaseSettings):
    """The sources every settings model reads: environment, ``.env``, ``threadline.toml``."""

    model_config = SettingsConfigDict(
        env_prefix="THREADLINE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings, dotenv_settings]
        if (path := config_path()).is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    def secrets(self) -> list[str]:
        """The values of every secret this model holds (for the log's redaction)."""
        found = (getattr(self, name) for name in type(self).model_fields)
        return [
            v.get_secret_value() for v in found if isinstance(v, SecretStr) and v.get_secret_value()
        ]


def config_path() -> Path:
    return Path(os.environ.get("THREADLINE_CONFIG", "threadline.toml"))


class Settings(SettingsBase):
    # --- model ---
    openai_api_key: SecretStr | None = secret("OPENAI_API_KEY")
    openai_base_url: str | None = secret("OPENAI_BASE_URL")
    model: str = "gpt-4o-mini"
    models: list[str] = Field(default_factory=list)
    """The models ``/threadline model NAME`` may choose (empty: any name; the server decides)."""
    openai_api: Literal["chat", "responses"] = "chat"
    """``chat``: Chat Completions (``/chat/completions``, any OpenAI-compatible server);
    ``responses``: OpenAI's Responses API (``/responses``), which keeps a reasoning model's
    reasoning, encrypted, with the thread."""
    fallback_models: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Models tried in turn when the thread's model cannot answer (no quota, server errors
    after retries, time-outs, unreachable); a comma list in the environment
    (``THREADLINE_FALLBACK_MODELS=gpt-4o-mini,llama3.1``)."""
    context_window: int = Field(default=128_000, ge=1_000)
    max_output_tokens: int | None = Field(default=None, ge=1)
    """Cap on each model answer, in tokens; each call asks for less when the prompt leaves less
    room in the context window."""
    temperature: float | None = Field(default=None, ge=0)
    """Randomness of the answers (0: the most likely words; OpenAI takes up to 2); unset: the
    server's default."""
    top_p: float | None = Field(default=None, ge=0, le=1)
    """Nucleus sampling: only the words making up this share of the probability."""
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    """Asks the server for repeatable answers (where it supports it)."""
    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks before it answers; sent only when set."""
    per_model: dict[str, ModelSettings] = Field(default_factory=dict)
    """Each model's own settings (``[per_model."NAME"]``): its context window, answer cap,
    sampling and reasoning effort, over the global ones; its own server and key."""
    model_timeout_s: float = Field(default=120.0, gt=0)
    model_max_retries: int = Field(default=4, ge=0, le=10)
    model_retry_after_max_s: float = Field(default=180.0, ge=0, le=3600)
    """The longest wait a model server may ask for (``Retry-After`` on a 429 or 503) that is
    waited out, the thread told when the call is tried again (Stop works meanwhile); a longer
    one ends the answer at once with the server's figure."""
    model_first_token_timeout_s: float = Field(default=60.0, gt=0)
    """Seconds a model call may send nothing (no text, no tool call) before the run ends with a
    note saying so; retries within that time count toward it."""
    price_input_per_mtok: float | None = Field(default=None, ge=0)
    """USD per million prompt tokens; with the output price, enables cost tracking."""
    price_output_per_mtok: float | None = Field(default=None, ge=0)
    system_prompt: str | None = None
    demo_chunk_delay_s: float = Field(default=0.03, ge=0, le=5)
    """The offline demo model's pause between streamed pieces."""
    text_tool_calls: bool = False
    """Read tool calls the model writes into its text (``<tool_call>…</tool_call>``, Llama's
    JSON, Mistral's ``[TOOL_CALLS]``) as calls, for a server whose own tool-call parser is off
    or does not fit the model (``on``/``off``)."""

    # --- engine ---
    max_turns: int = Field(default=25, ge=1, le=500)
    max_input_chars: int = Field(default=20_000, ge=100)
    """Longer user messages are cut to this many characters, and the thread is told."""
    answer_file_after: int = Field(default=12_000, ge=2_000, le=1_000_000)
    """An answer longer than this many characters shows its first part in the thread and the
    rest in a file, ``answer.md``, posted below it (12,000 characters: two Slack messages or
    seven Discord ones, about 2,000 words; beyond that a file reads better than a wall of
    messages, and a Discord thread is not held up posting them)."""
    feedback: bool = False
    """👍 / 👎 buttons under each final answer (a 👎 asks "what went wrong?" in one line); what
    people say is kept per run (``threadline feedback``) and counted in ``/metrics``."""
    during_run: Literal["steer", "queue"] = "steer"
    """A message arriving during a run: shown to the model at its next call, or queued."""
    thread_replies: Literal["all", "mentions"] = "all"
    """In a thread the bot is in: answer every message (``all``), or only those that mention it
    (``mentions``; the others are kept and read with the next mention). Direct messages are
    always answered."""
    compact_at: float = Field(default=0.8, gt=0.1, le=1.0)
    """Compact a thread when its estimated tokens pass this share of the context window."""
    keep_recent_turns: int = Field(default=4, ge=1, le=100)
    """User turns kept verbatim when a thread is compacted."""
    run_max_tokens: int | None = Field(default=None, ge=1)
    run_max_cost_usd: float | None = Field(default=None, gt=0)
    day_max_tokens: int | None = Field(default=None, ge=1)
    """Per thread and UTC day."""
    day_max_cost_usd: float | None = Field(default=None, gt=0)
    delegate_max_turns: int = Field(default=8, ge=1, le=100)
    """Model calls a ``delegate_task`` sub-agent may make before it must give its answer."""
    delegate_max_tokens: int = Field(default=60_000, ge=1_000)
    """Tokens one sub-agent may use (its calls' prompt and output tokens) before it is stopped."""
    delegate_max_concurrent: int = Field(default=4, ge=1, le=32)
    """Sub-agents of one thread that run at once (more wait for a free place)."""

    thread_history_messages: int = Field(default=50, ge=0, le=200)
    """First mentioned in an existing thread: how many of its earlier messages to read (0: none)."""
    thread_history_chars: int = Field(default=8_000, ge=0, le=100_000)
    """How many characters of them the model reads (the most recent messages first)."""
    read_channel_messages: int = Field(default=50, ge=0, le=200)
    """Most messages one ``read_channel`` call gives the model (0: no ``read_channel`` tool)."""
    read_channel_chars: int = Field(default=12_000, ge=500, le=100_000)
    """Most characters of them (the most recent messages kept)."""

    # --- approvals and tools ---
    approval_ttl_s: float = Field(default=1800.0, gt=0)
    approval_notify_max: int = Field(default=10, ge=0, le=50)
    """Most people one approval request tells by a direct message at each stage (its
    approvers, then its escalation); 0: no direct messages."""
    workspace_tools: bool = True
    """Give each thread a workspace directory and the tools to use it (commands ask first)."""
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    """Where commands run: ``auto`` (in bubblewrap; no command tool when it cannot work),
    ``bwrap`` (required: refuse to start without it), ``none`` (unsandboxed, on the host)."""
    command_processes: int = Field(default=12, ge=4, le=4096)
    """Processes a sandboxed command may run at once (``RLIMIT_NPROC``; commands running at the
    same time share it when the bot runs as root, as they all run as one user)."""
    command_process_memory_mib: int = Field(default=256, ge=64, le=1 << 20)
    """Address space of each process of a sandboxed command, in MiB (``RLIMIT_AS``). A
    command's memory in all is at most ``command_processes`` × this, plus its private ``/tmp``
    (256 MiB) and ``/dev/shm`` (64 MiB): 3,392 MiB by default, which fits a 4 GiB host."""
    tools: dict[str, ToolSettings] = Field(default_factory=dict)
    """Per tool (``threadline.toml``: ``[tools.run_command]``)."""
    access: AccessSettings = Field(default_factory=AccessSettings)
    """Who may talk to the bot, where, and in direct messages (``[access]``)."""
    mcp_servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    """MCP servers whose tools the model is offered as ``<name>__<tool>``."""
    channels: dict[str, ChannelSettings] = Field(default_factory=dict)
    """Per channel or thread-key prefix (``[channels."slack:T1:C1"]``)."""
    custom_tools: dict[str, CustomToolSettings] = Field(default_factory=dict)
    """Programs and HTTP requests offered to the model as tools (``[custom_tools.NAME]``)."""
    skills_dir: Path | None = None
    """Where the skills are (``<name>/SKILL.md``); default: ``skills`` in the data directory."""

    # --- files ---
    vision: Literal["auto", "on", "off"] = "auto"
    """Whether images shared in a thread go to the model as images: ``auto`` (when the model's
    name is one known to see images), ``on``, ``off`` (described as attached)."""
    file_max_bytes: int = Field(default=20 * 1024 * 1024, ge=1024, le=1024**3)
    """Larger shared files are not downloaded (the thread is told); also the most
    ``send_file`` posts."""
    file_download_seconds: float = Field(default=60.0, ge=1.0, le=3600.0)
    """How long one shared file's download may take; a slower one is stopped and the thread
    told (a host that sends headers and then nothing is cut off here)."""
    image_max_bytes: int = Field(default=5 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    """Larger images are saved in the workspace but not shown to the model."""
    file_preview_chars: int = Field(default=1_000, ge=0, le=20_000)
    """How much of a shared text file (or a PDF's text) the model reads with the message."""

    # --- scheduled prompts and memory ---
    timezone: str = "UTC"
    """Where times without a zone, and cron expressions, are read (an IANA name: Europe/Paris)."""
    schedules_per_thread: int = Field(default=10, ge=1, le=1000)
    schedules_per_channel: int = Field(default=50, ge=1, le=100_000)
    schedule_min_interval_s: float = Field(default=60.0, ge=60.0)
    """A recurring prompt runs at most this often."""
    memories_per_channel: int = Field(default=10_000, ge=1, le=1_000_000)
    memory_note_items: int = Field(default=10, ge=0, le=100)
    """How many of the thread's most recent memories the model is shown before each call."""
    memory_note_chars: int = Field(default=2_000, ge=0, le=20_000)

    # --- runtime ---
    data_dir: Path = Path(".threadline")
    secret_key: SecretStr | None = None
    """Encrypts what the bot keeps of its sign-ins to MCP servers (``THREADLINE_SECRET_KEY``, a
    long random value); unset: a key made once in ``data_dir/secret.key``."""
    public_url: str | None = None
    """Where people's browsers reach this bot's HTTP server (``https://bot.example.com``): MCP
    sign-ins come back to ``public_url/mcp/oauth/callback``; unset: ``http://http_host:http_port``."""
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=0, le=65535)
    log_level: str = "INFO"
    playground: bool | None = None
    """Serve the local playground. Default: on when no platform token is set."""
    playground_token: SecretStr | None = None
    metrics_token: SecretStr | None = None
    """When set, ``/metrics`` answers only requests with ``Authorization: Bearer <token>``."""
    database_url: SecretStr | None = None
    """``postgresql://user:password@host:5432/dbname``: the PostgreSQL store (SQLite when unset)."""
    lease_ttl_s: float = Field(default=10.0, ge=1.0, le=300.0)
    """With several workers: a thread's lease lasts this long unless renewed (every third of it).
    A worker that dies is known gone sooner, when its connection to the database ends; a hung
    one's threads are taken over once its leases have expired."""
    worker_poll_s: float = Field(default=1.0, gt=0.0, le=60.0)
    """With several workers: how often each looks for work no nudge announced, and for the
    threads of workers that died (taken over at the first look after)."""
    worker_id: str | None = Field(default=None, max_length=200)
    """This worker's name in the leases (default: host, process id and a random part)."""

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        value = value.upper()
        if value not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return zone_name(value)

    @field_validator("openai_base_url", "public_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return url_setting(value)

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        if not value.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a URL starting with postgresql://")
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_servers(cls, servers: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name, server in servers.items():
            if not MCP_SERVER_NAME.match(name) or "__" in name:
                raise _invalid("a server name is 1-60 letters, digits, _ or - (no '__')", name)
            if (problem := server.problem()) is not None:
                raise _invalid(problem, name)
            if server.enabled and (missing := server.missing_variables(os.environ)):
                raise _invalid(f"the environment variable {missing[0]} is not set", name)
        return servers

    @field_validator("tools", mode="before")
    @classmethod
    def _tool_sections(cls, tools: Any) -> Any:
        """``[tools.fetch_url]`` and ``[tools.web_search]`` hold settings of their own."""
        if not isinstance(tools, dict):
            return tools
        found = dict(tools)
        for name, section in TOOL_SECTIONS.items():
            if isinstance(value := tools.get(name), dict):
                try:
                    found[name] = section.model_validate(value)
                except ValidationError as exc:
                    raise _nested((name,), section, exc) from None
        search = found.get("web_search")
        if isinstance(search, WebSearchSettings) and (problem := search.problem(os.environ)):
            raise _invalid(problem, "web_search")
        return found

    @field_validator("custom_tools", mode="before")
    @classmethod
    def _custom_tools(cls, tools: Any) -> Any:
        if not isinstance(tools, dict):
            return tools
        found: dict[str, Any] = {}
        for name, value in tools.items():
            try:
                found[name] = CustomToolSettings.model_validate(value)
            except ValidationError as exc:
                raise _nested((name,), CustomToolSettings, exc) from None
            if (
                found[name].enabled
                and (problem := found[name].problem(name, os.environ)) is not None
            ):
                raise _invalid(problem, name)
        return found

    @field_validator("models")
    @classmethod
    def _models(cls, values: list[str]) -> list[str]:
        return [model_name(v) for v in values]

    @field_validator("fallback_models", mode="before")
    @classmethod
    def _fallbacks(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part for part in value.split(",") if part.strip()]
        if isinstance(value, list):
            return [model_name(v) if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _route_keys(self) -> Settings:
        for name, route in self.per_model.items():
            if route.api_key_env is not None and self.route_key(name) is None:
                problem = f"the environment variable {route.api_key_env} is not set"
                raise _invalid(problem, "per_model", name, "api_key_env")
        return self

    def route_key(self, name: str) -> SecretStr | None:
        """The key of the model ``name``'s own route, read from the environment variable its
        ``api_key_env`` names (then ``.env``); None when it names none or it is unset."""
        route = self.per_model.get(name)
        if route is None or route.api_key_env is None:
            return None
        value = os.environ.get(route.api_key_env)
        env_file = self.model_config.get("env_file")
        if value is None and isinstance(env_file, str) and Path(env_file).is_file():
            value = dotenv_values(env_file).get(route.api_key_env)
        return SecretStr(value) if value else None

    @field_validator("per_model")
    @classmethod
    def _per_model(cls, tables: dict[str, ModelSettings]) -> dict[str, ModelSettings]:
        for name in tables:
            try:
                model_name(name)
            except ValueError as exc:
                raise _invalid(str(exc), name) from None
        return tables

    @field_validator("channels")
    @classmethod
    def _channel_servers(
        cls, channels: dict[str, ChannelSettings], info: Any
    ) -> dict[str, ChannelSettings]:
        known = set(info.data.get("mcp_servers") or ())
        for prefix, channel in channels.items():
            unknown = sorted(set(channel.mcp_servers or ()) - known)
            if unknown:
                raise _invalid(f"no server named {unknown[0]!r}", prefix, "mcp_servers")
        return channels

    @property
    def uses_demo_model(self) -> bool:
        return self.openai_api_key is None and self.openai_base_url is None

    def playground_enabled(self, platforms: bool) -> bool:
        """Whether to serve the playground, given whether any chat platform is configured."""
        return self.playground if self.playground is not None else not platforms

    def channel(self, key: str) -> ChannelSettings | None:
        """The most specific ``[channels."…"]`` section covering the thread ``key`` (its parts
        compared whole: :mod:`bot.policy.keys`)."""
        best = keys.most_specific(self.channels, key)
        return self.channels[best] if best is not None else None

    @property
    def database_path(self) -> Path:
        return self.data_dir / "threadline.sqlite3"

    def secrets(self) -> list[str]:
        """As :meth:`SettingsBase.secrets`, and the database URL's password on its own."""
        found = super().secrets()
        keys = (self.route_key(name) for name in self.per_model)
        found += [key.get_secret_value() for key in keys if key is not None]
        if self.database_url is not None:
            password = urlsplit(self.database_url.get_secret_value()).password
            found += [password] if password else []
        return found

    @property
    def skills_path(self) -> Path:
        return self.skills_dir if self.skills_dir is not None else self.data_dir / "skills"

    @property
    def fetch_url(self) -> FetchUrlSettings:
        found = self.tools.get("fetch_url")
        return found if isinstance(found, FetchUrlSettings) else FetchUrlSettings()

    @property
    def web_search(self) -> WebSearchSettings:
        found = self.tools.get("web_search")
        return found if isinstance(found, WebSearchSettings) else WebSearchSettings()


S = TypeVar("S", bound=SettingsBase)


def _invalid(message: str, *where: str | int) -> PydanticCustomError:
    """A validator's refusal; ``where`` is the key path below the field (a server's name…)."""
    return PydanticCustomError("invalid", message, {"threadline_loc": where} if where else None)


def _nested(where: tuple[str, ...], model: type[BaseModel], exc: ValidationError) -> Any:
    """A section validated by a validator of its own (``[tools.fetch_url]``), refused as the
    first of its errors, described as :func:`load` describes any."""
    first = exc.errors()[0]
    return _invalid(describe_error(model, first), *where, *first["loc"])


def setting_name(cls: type[SettingsBase], field: str) -> str:
    """The name an operator writes for a settings field."""
    info = cls.model_fields.get(field)
    if info is None:  # reported under its environment name
        return field if field.isupper() else f"THREADLINE_{field.upper()}"
    alias = info.validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    return f"THREADLINE_{field.upper()}"


def _unwrap(kind: Any) -> Any:
    """``X | None`` → ``X`` (the model, dict or list among the choices first)."""
    if get_origin(kind) in (Union, UnionType):
        choices = [k for k in get_args(kind) if k is not type(None)]
        for choice in choices:
            if get_origin(choice) in (dict, list) or (
                isinstance(choice, type) and issubclass(choice, BaseModel)
            ):
                return choice
        return choices[0] if choices else kind
    return kind


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model that holds the keys at ``loc`` below ``model`` (``("access",)``: AccessSettings)."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                return None
            current = info.annotation
        elif get_origin(current) in (dict, list):
            current = get_args(current)[-1]
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _keys_of(model: type[BaseModel]) -> list[str]:
    """The keys a model accepts: its fields, and the lower-case names of aliased ones."""
    known: set[str] = set()
    for name, info in model.model_fields.items():
        known.add(name)
        if isinstance(alias := info.validation_alias, AliasChoices):
            known.update(a.lower() for a in alias.choices if isinstance(a, str))
    return sorted(known)


def _unknown_key(key: str, known: Sequence[str], what: str = "key") -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f"unknown {what} {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def describe_error(model: type[BaseModel], error: Any) -> str:
    """One pydantic error in an operator's words: the allowed values of a choice, the likely
    key for an unknown one, and no "Value error, " prefix."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "literal_error":
        allowed = re.findall(r"'((?:[^'\\]|\\.)*)'", str(ctx.get("expected", "")))
        if allowed:
            return f"must be one of {', '.join(allowed)} (not {error['input']!r})"
    if kind == "extra_forbidden" and error["loc"]:
        owner = _model_at(model, error["loc"][:-1])
        return _unknown_key(str(error["loc"][-1]), _keys_of(owner) if owner else [])
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message


def _key_path(loc: Sequence[str | int]) -> str:
    """``("channels", "slack:T1:C1", "model")`` → ``channels."slack:T1:C1".model``."""
    return ".".join(
        str(p) if isinstance(p, int) or re.fullmatch(r"[A-Za-z0-9_-]+", p) else f'"{p}"'
        for p in loc
    )


TOML_KEY = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*""")
TOML_TABLE = re.compile(r"\s*\[\[?(.*?)\]\]?\s*(?:#.*)?$")


def _dotted(text: str) -> tuple[list[str], str]:
    """The dotted key at the start of ``text``, and what follows it."""
    found: list[str] = []
    while (m := TOML_KEY.match(text)) is not None and m.end() > 0:
        found.append(next(g for g in m.groups() if g is not None))
        text = text[m.end() :]
        if not text.startswith("."):
            break
        text = text[1:]
    return found, text


def line_of(text: str, loc: Sequence[str | int]) -> int | None:
    """The line of a TOML document that sets the key at ``loc`` (tomllib gives no positions):
    where the key itself is written, else the nearest enclosing table or key."""
    target = [str(p) for p in loc]
    table: list[str] = []
    best: tuple[int, int] | None = None  # (depth, line)
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if (header := TOML_TABLE.match(line)) is not None and line.lstrip().startswith("["):
            table, _ = _dotted(header.group(1))
            defined = table
        else:
            keys, rest = _dotted(line)
            if not keys or not rest.startswith("="):
                continue
            defined = table + keys
        if defined == target:
            return number
        if defined == target[: len(defined)] and (best is None or len(defined) > best[0]):
            best = (len(defined), number)
    return best[1] if best is not None else None


def config_file() -> tuple[Path, str, dict[str, Any]] | None:
    """The configuration file's path, text and contents; None when there is none. A path
    ``THREADLINE_CONFIG`` names must be a readable file, and the file valid TOML (ConfigError)."""
    path = config_path()
    named = "THREADLINE_CONFIG" in os.environ
    if not named and not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("THREADLINE_CONFIG", f"{path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError("THREADLINE_CONFIG", f"{path} is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError("THREADLINE_CONFIG", f"{path} cannot be read ({why})") from None
    try:
        return path, text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = re.search(r" \(at line (\d+), column \d+\)$", message)
        if at is None:
            raise ConfigError(str(path), f"not valid TOML: {message}") from None
        problem = message[: at.start()]
        raise ConfigError(f"{path}, line {at.group(1)}", f"not valid TOML: {problem}") from None


def _set_outside_file(cls: type[SettingsBase], field: str, overrides: Mapping[str, Any]) -> bool:
    """Whether ``field`` is given by the caller, the environment or ``.env`` (which win over
    the file)."""
    info = cls.model_fields.get(field)
    if field in overrides or (info is not None and info.alias in overrides):
        return True
    name = setting_name(cls, field).upper()
    if any(k.upper() == name for k in os.environ):
        return True
    env_file = overrides.get("_env_file", cls.model_config.get("env_file"))
    if isinstance(env_file, str | Path) and Path(env_file).is_file():
        return any(k.upper() == name for k in dotenv_values(env_file))
    return False


def load(cls: type[S], **overrides: Any) -> S:
    """Read ``cls``'s settings; invalid ones raise a :class:`ConfigError` naming the first:
    by its environment variable, or by the file, line and key path when the file set it."""
    found = config_file()
    try:
        return cls(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc: tuple[str | int, ...] = (
            *first["loc"],
            *(first.get("ctx") or {}).get("threadline_loc", ()),
        )
        problem = describe_error(cls, first)
        if not loc:
            raise ConfigError("configuration", problem) from None
        field = str(loc[0])
        if found is not None and field in found[2] and not _set_outside_file(cls, field, overrides):
            path, text, _ = found
            line = line_of(text, loc)
            where = f"{path}, line {line}" if line is not None else str(path)
            raise ConfigError(f"{where}: {_key_path(loc)}", problem) from None
        below = f"{_key_path(loc[1:])}: " if len(loc) > 1 else ""
        raise ConfigError(setting_name(cls, field), f"{below}{problem}") from None
    except (ValueError, OSError) as exc:  # a bad .env
        raise ConfigError(str(config_path()), str(exc)) from None


def check_config_file(*models: type[SettingsBase]) -> None:
    """Refuse a ``threadline.toml`` with a top-level key no settings model knows (a misspelling
    would otherwise be ignored), naming the closest known key."""
    found = config_file()
    if found is None:
        return
    path, text, data = found
    known = sorted({key for model in models for key in _keys_of(model)})
    for key in data:
        if key not in known:
            line = line_of(text, (key,))
            where = f"{path}, line {line}" if line is not None else str(path)
            raise ConfigError(where, _unknown_key(key, known, "setting"))


def load_settings(**overrides: Any) -> Settings:
    """The core's settings (see :func:`load`)."""
    return load(Settings, **overrides)


def every_approvers(settings: Settings) -> list[tuple[str, ApproversSettings]]:
    """Each approvers setting, with where it is (``[tools.deploy]``, ``[channels."slack:T1"]``)."""
    found: list[tuple[str, ApproversSettings | None]] = [
        (f"[tools.{name}]", tool.approvers) for name, tool in settings.tools.items()
    ]
    for prefix, channel in settings.channels.items():
        found.append((f'[channels."{prefix}"]', channel.approvers))
        found.extend(
            (f'[channels."{prefix}".tools.{name}]', tool.approvers)
            for name, tool in channel.tools.items()
        )
    return [(where, chosen) for where, chosen in found if chosen is not None]


def approvers_told(settings: Settings) -> bool:
    """Whether some approval may tell people by direct message: approvers listed (users,
    roles, admins) who are told, or an escalation."""
    return any(
        (chosen.notify and (chosen.users or chosen.roles or chosen.admins)) or chosen.escalate_to
        for _, chosen in every_approvers(settings)
    )
