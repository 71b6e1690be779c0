"""Settings of the tools that have their own, in ``threadline.toml``: ``[tools.fetch_url]`` and
``[tools.web_search]`` (besides the approval settings every ``[tools.NAME]`` has, see
:class:`bot.config.ToolSettings`), and ``[custom_tools.NAME]``."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, IPvAnyNetwork, field_validator, model_validator

ENV_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}``: read from the environment when the tool runs."""
ARG_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``{name}``: replaced by the value of the argument ``name``."""
PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_HOST = re.compile(
    r"^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)


class FetchUrlOptions(BaseModel):
    """``[tools.fetch_url]``: what the page reader may reach, and how much it reads."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    allow_domains: list[str] = Field(default_factory=list)
    """Domains read without asking (each also covers its subdomains); others ask first."""
    allow_private: bool = False
    """Let it reach loopback, private, link-local and other non-public addresses."""
    allow_networks: list[IPvAnyNetwork] = Field(default_factory=list)
    """Non-public networks it may reach nonetheless (an internal wiki's ``10.1.2.0/24``),
    without allowing every private address."""
    timeout_s: float = Field(default=15.0, gt=0, le=300)
    """For the whole fetch: every redirect, the headers and the body."""
    max_bytes: int = Field(default=2_000_000, ge=10_000, le=100_000_000)
    """The most of a body it reads."""
    max_redirects: int = Field(default=5, ge=0, le=20)

    @field_validator("allow_domains")
    @classmethod
    def _domains(cls, domains: list[str]) -> list[str]:
        cleaned = []
        for domain in domains:
            name = domain.strip().lower().removeprefix("*.").strip(".")
            try:
                name = name.encode("idna").decode("ascii")  # bücher.de → xn--bcher-kva.de
            except UnicodeError:
                pass
            if not _HOST.match(name):
                raise ValueError(
                    f"{domain!r} is not a domain name (write docs.python.org, not a URL)"
                )
            cleaned.append(name)
        return cleaned


class WebSearchOptions(BaseModel):
    """``[tools.web_search]``: where ``web_search`` asks (no provider: no ``web_search``)."""

    model_config = ConfigDict(extra="forbid")
    provider: Literal["searxng", "brave", "tavily"] | None = None
    """Default: ``searxng`` when ``searxng_url`` is set."""
    searxng_url: str | None = None
    """A SearXNG instance with the JSON format enabled (``http://searx.internal:8080``)."""
    api_key_env: str | None = None
    """The environment variable holding the Brave or Tavily key (default ``BRAVE_API_KEY``,
    ``TAVILY_API_KEY``)."""
    endpoint: str | None = None
    """The provider's API address, for a proxy (default: the provider's own)."""
    max_results: int = Field(default=5, ge=1, le=20)
    timeout_s: float = Field(default=15.0, gt=0, le=120)

    @property
    def chosen(self) -> str | None:
        return self.provider or ("searxng" if self.searxng_url else None)

    @property
    def key_variable(self) -> str | None:
        provider = self.chosen
        if provider in (None, "searxng"):
            return None
        return self.api_key_env or f"{str(provider).upper()}_API_KEY"

    def problem(self, environ: Mapping[str, str]) -> str | None:
        for url in (self.searxng_url, self.endpoint):
            if url is not None and not url.startswith(("http://", "https://")):
                return f"{url!r} must start with http:// or https://"
        if self.chosen == "searxng" and not self.searxng_url:
            return "provider searxng needs searxng_url"
        variable = self.key_variable
        if variable is not None and not environ.get(variable):
            return f"the environment variable {variable} (the {self.chosen} key) is not set"
        return None


class ParameterSettings(BaseModel):
    """One parameter of a custom tool."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["string", "integer", "number", "boolean"] = "string"
    description: str = Field(default="", max_length=1000)
    enum: list[str | int | float] | None = Field(default=None, min_length=1)
    required: bool | None = None
    """Default: required unless it has a ``default``."""
    default: str | int | float | bool | None = None

    @property
    def needed(self) -> bool:
        return self.required if self.required is not None else self.default is None


class HttpSettings(BaseModel):
    """A custom tool that makes one HTTP request."""

    model_config = ConfigDict(extra="forbid")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    url: str
    """May hold ``{name}`` (an argument, in the path or query) and ``${VAR}`` (the environment)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Values may hold ``${VAR}``: read from the environment, never shown to the model."""


class CustomToolSettings(BaseModel):
    """``[custom_tools.NAME]``: a program (``command``, run in the sandbox, arguments as argv)
    or an HTTP request (``http``) offered to the model as the tool NAME."""

    model_config = ConfigDict(extra="forbid")
    description: str = Field(min_length=1, max_length=2000)
    parameters: dict[str, ParameterSettings] = Field(default_factory=dict)
    command: list[str] | None = Field(default=None, min_length=1)
    """The program and its arguments; ``{name}`` inside an element is replaced by the
    argument's value (the element stays one argument, whatever the value holds)."""
    http: HttpSettings | None = None
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    network: bool = False
    """Let the command reach the network from the sandbox."""
    enabled: bool = True

    def problem(self, name: str, environ: Mapping[str, str] = os.environ) -> str | None:
        """What is wrong with this tool's definition, if anything."""
        if not TOOL_NAME.match(name):
            return "a tool name is 1-64 letters, digits, _ or -"
        if "__" in name:
            return "a tool name cannot contain '__' (the toolkits' separator)"
        if (self.command is None) == (self.http is None):
            return "give either command (a program and its arguments) or http (a request)"
        for param, spec in self.parameters.items():
            if not PARAMETER_NAME.match(param):
                return f"parameter {param!r}: a name is a letter or _, then letters, digits or _"
            if (found := _parameter_problem(spec)) is not None:
                return f"parameter {param}: {found}"
        texts = list(self.command) if self.command is not None else _http_texts(self.http)
        used = {m.group(1) for t in texts for m in ARG_PLACEHOLDER.finditer(t)}
        if self.command is not None:
            if ARG_PLACEHOLDER.search(self.command[0]):
                return "the program (the first element of command) cannot come from an argument"
            unused = [p for p, spec in self.parameters.items() if spec.needed and p not in used]
            if unused:
                return f"parameter {unused[0]} is required but command does not use {{{unused[0]}}}"
            return None
        unknown = sorted(used - set(self.parameters))
        if unknown:
            return f"http.url uses {{{unknown[0]}}}, which is not a parameter"
        return _http_problem(self.http, environ) if self.http is not None else None

    def variables(self) -> list[str]:
        """The environment variables it reads (``${VAR}`` of its request)."""
        texts = _http_texts(self.http) if self.http is not None else []
        return sorted({m.group(1) for t in texts for m in ENV_PLACEHOLDER.finditer(t)})


def _parameter_problem(spec: ParameterSettings) -> str | None:
    kinds = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}[
        spec.type
    ]
    values = [*(spec.enum or ()), *([spec.default] if spec.default is not None else [])]
    for value in values:
        if isinstance(value, bool) != (spec.type == "boolean") or not isinstance(value, kinds):
            return f"{value!r} is not of type {spec.type}"
    if spec.enum is not None and spec.type == "boolean":
        return "a boolean takes no enum"
    return None


def _http_texts(http: HttpSettings | None) -> list[str]:
    return [] if http is None else [http.url, *http.headers.values()]


def _http_problem(http: HttpSettings, environ: Mapping[str, str]) -> str | None:
    if not http.url.startswith(("http://", "https://")):
        return "http.url must start with http:// or https://"
    host = http.url.split("/", 3)[2]
    if not host or ARG_PLACEHOLDER.search(host) or ENV_PLACEHOLDER.search(host):
        return "http.url: arguments and variables may appear in its path and query, not in its host"
    for header, value in http.headers.items():
        if ARG_PLACEHOLDER.search(value):
            return f"http.headers.{header}: arguments cannot go into headers"
    missing = sorted(
        {m.group(1) for t in _http_texts(http) for m in ENV_PLACEHOLDER.finditer(t)} - set(environ)
    )
    if missing:
        return f"the environment variable {missing[0]} is not set"
    return None


def tool_secrets(
    custom: Mapping[str, CustomToolSettings], search: WebSearchOptions, environ: Mapping[str, str]
) -> list[str]:
    """The values the tools read from the environment (for the log's redaction)."""
    names = {name for spec in custom.values() for name in spec.variables()}
    if search.key_variable is not None:
        names.add(search.key_variable)
    return [environ[name] for name in sorted(names) if environ.get(name)]


STATE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


class Gating(BaseModel):
    """What a toolkit's tool declares about the toolkit's state in a thread (its gating): the
    states it requires or forbids, the states a successful call enables or
    disables, the context keys it needs, which parameters take their values from the context
    (an enum of what exists now), and which arguments a successful call adds to the context.
    In ``threadline.toml``: ``[mcp_servers.NAME.gating.TOOL]``; in code: beside the tool
    (:class:`bot.tools.gating.GatedToolkit`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    requires: frozenset[str] = frozenset()
    """Offered only while every one of these states is on."""
    forbids: frozenset[str] = frozenset()
    """Offered only while none of these states is on."""
    enables: frozenset[str] = frozenset()
    """Turned on when a call succeeds."""
    disables: frozenset[str] = frozenset()
    """Turned off when a call succeeds."""
    needs: frozenset[str] = frozenset()
    """Offered only while each of these context keys holds something."""
    choices: dict[str, str] = Field(default_factory=dict)
    """Parameter → context key: the parameter's values are the ones the key holds now (the
    tool is offered only while it holds some; a call with another value is refused)."""
    remembers: dict[str, str] = Field(default_factory=dict)
    """Context key → argument: a successful call adds the argument's value to the key's list."""
    forgets: dict[str, str] = Field(default_factory=dict)
    """Context key → argument: a successful call removes the argument's value from the key's list."""

    @field_validator("requires", "forbids", "enables", "disables", "needs")
    @classmethod
    def _names(cls, names: frozenset[str]) -> frozenset[str]:
        for name in names:
            if not STATE_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not a state or context name (1-64 letters, digits, _ . : -)"
                )
        return names

    @field_validator("choices", "remembers", "forgets")
    @classmethod
    def _pairs(cls, pairs: dict[str, str]) -> dict[str, str]:
        for key, value in pairs.items():
            for name in (key, value):
                if not STATE_NAME.match(name):
                    raise ValueError(
                        f"{name!r} is not a parameter or context name (1-64 letters, digits, _ . : -)"
                    )
        return pairs

    @model_validator(mode="after")
    def _consistent(self) -> Gating:
        for a, b, what in (
            (self.requires, self.forbids, "both required and forbidden"),
            (self.enables, self.disables, "both enabled and disabled"),
        ):
            if both := sorted(a & b):
                raise ValueError(f"{', '.join(both)}: {what}")
        return self

    @property
    def empty(self) -> bool:
        return self == EMPTY_GATING


EMPTY_GATING = Gating()
