"""Per-channel settings for one thread: ``[channels."<prefix>"]`` over the global settings (the
most specific section wins, as for approvers and tools; keys are matched part by part,
:mod:`bot.policy.keys`), and the thread's own model
(``/threadline model NAME``, kept with its session) over both.

What a section may set: the model, a system prompt (added to the default one, or replacing it),
which tools are offered (``offer_tools``, ``hide_tools``; MCP servers with ``mcp_servers``),
the limits of a run (``max_turns``, token and cost caps, the context window), how the model
samples (``temperature``, ``top_p``, ``seed``, ``reasoning_effort``), ``during_run`` and
``thread_replies``.

The model's own table (``[per_model."NAME"]``, for the model the thread uses) sits between:
global < the model's table < the channel's section, each value from the highest layer that
sets it. A channel's value is for its threads whatever model they use.

Which messages of a thread the bot answers is decided here, once (:meth:`Channels.answers`):
a message that mentions the bot (or is in a direct message) always; any other message of a
thread the bot is in unless the channel's ``thread_replies`` is ``mentions`` or the thread is
quiet (``/threadline quiet``). What it does not answer is kept in the thread's session and read
with the next answered message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel

from bot.config import ChannelSettings, Settings, model_name
from bot.engine.states import EngineConfig
from bot.errors import Refused
from bot.policy.who import channel_section

LIMITS = (
    "max_turns",
    "max_output_tokens",
    "context_window",
    "run_max_tokens",
    "run_max_cost_usd",
    "day_max_tokens",
    "day_max_cost_usd",
)
"""The limits a channel section may set, by the names of their :class:`EngineConfig` fields."""
MODEL_LIMITS = ("context_window", "max_output_tokens", "text_tool_calls")
"""The limits a model's own table (``[per_model."NAME"]``) may set, and whether the calls it
writes as text are read."""
SAMPLING = ("temperature", "top_p", "seed", "reasoning_effort")
"""How the model samples: set globally, per model and per channel."""
DEFAULT_WORDS = frozenset({"default", "reset", "channel"})
"""``/threadline model default``: back to the channel's model."""
_MAX_CACHED = 512


@dataclass(frozen=True, slots=True)
class Chosen:
    """A thread's model and where it comes from."""

    name: str
    source: str


def _set(section: BaseModel | None, names: Sequence[str]) -> dict[str, Any]:
    """The fields among ``names`` that ``section`` sets."""
    if section is None:
        return {}
    return {name: value for name in names if (value := getattr(section, name)) is not None}


class Channels:
    """Resolves the settings of a thread from its key (and its session's own model)."""

    def __init__(self, settings: Settings, base: EngineConfig) -> None:
        self._settings = settings
        self._base = base
        self._configs: dict[tuple[str | None, str | None], EngineConfig] = {}

    def section(self, key: str) -> tuple[str | None, ChannelSettings | None]:
        """The most specific ``[channels."<prefix>"]`` section for ``key``, with its name."""
        return channel_section(self._settings, key)

    def config(self, key: str, chosen: str | None = None) -> EngineConfig:
        """The engine's settings for a run in the thread ``key`` (computed once per section
        and chosen model)."""
        prefix, channel = self.section(key)
        kept = self._configs.get((prefix, chosen))
        if kept is None:
            kept = self._resolve(channel, chosen)
            if len(self._configs) >= _MAX_CACHED:
                self._configs.clear()
            self._configs[(prefix, chosen)] = kept
        return kept

    def _resolve(self, channel: ChannelSettings | None, chosen: str | None) -> EngineConfig:
        base = self._base
        model = chosen or (channel.model if channel is not None else None)
        own = self._settings.per_model.get(model or self._settings.model)
        limits = {**_set(own, MODEL_LIMITS), **_set(channel, LIMITS)}
        sampling = replace(base.sampling, **{**_set(own, SAMPLING), **_set(channel, SAMPLING)})
        config = replace(base, **limits, model=model, sampling=sampling)
        if channel is None:
            return config
        prompt = base.system_prompt
        if channel.system_prompt is not None:
            prompt = (
                channel.system_prompt
                if channel.system_prompt_mode == "replace"
                else f"{prompt}\n\n{channel.system_prompt}"
            )
        return replace(
            config,
            system_prompt=prompt,
            offer_tools=tuple(channel.offer_tools) if channel.offer_tools is not None else None,
            hide_tools=tuple(channel.hide_tools),
        )

    def model_config(self, name: str) -> EngineConfig:
        """The settings of a run on the model ``name`` where no channel section applies."""
        return self._resolve(None, name)

    def during_run(self, key: str) -> Literal["steer", "queue"]:
        _, channel = self.section(key)
        if channel is not None and channel.during_run is not None:
            return channel.during_run
        return self._settings.during_run

    def thread_replies(self, key: str) -> Literal["all", "mentions"]:
        _, channel = self.section(key)
        if channel is not None and channel.thread_replies is not None:
            return channel.thread_replies
        return self._settings.thread_replies

    def answers(self, key: str, *, addressed: bool, quiet: bool) -> bool:
        """Whether a message of the bot's thread ``key`` is answered (False: it is kept, and
        read with the next one that is): ``addressed`` (a mention, a direct message) always;
        another one unless the thread is ``quiet`` or its channel answers mentions only."""
        if addressed:
            return True
        return not quiet and self.thread_replies(key) == "all"

    def model(self, key: str, chosen: str | None) -> Chosen:
        """The model a run in the thread asks, and where that was set."""
        if chosen:
            return Chosen(chosen, "chosen for this thread")
        prefix, channel = self.section(key)
        if channel is not None and channel.model is not None:
            return Chosen(channel.model, f'set for channel "{prefix}"')
        return Chosen(self._settings.model, "THREADLINE_MODEL")

    def choices(self, key: str) -> list[str]:
        """The models ``/threadline model`` may choose in the thread (empty: any)."""
        _, channel = self.section(key)
        if channel is not None and channel.models is not None:
            return channel.models
        return self._settings.models

    def choose(self, key: str, current: str | None, wanted: str) -> tuple[str | None, str]:
        """``/threadline model [NAME]``: the thread's new own model (None: its channel's) and
        what to tell the person; :class:`Refused` says why not."""
        wanted = wanted.strip()
        choices = self.choices(key)
        offered = f" Choices: {', '.join(choices)}." if choices else ""
        if not wanted:
            now = self.model(key, current)
            return current, f"Model here: {now.name} ({now.source}).{offered}"
        if wanted.lower() in DEFAULT_WORDS:
            back = self.model(key, None)
            return None, f"This thread now uses {back.name} ({back.source})."
        try:
            name = model_name(wanted)
        except ValueError as exc:
            raise Refused(str(exc)) from None
        if choices and name not in choices:
            raise Refused(f"{name!r} is not among the models this bot may use here.{offered}")
        return name, f"This thread now uses {name}; other threads are unchanged."


def describe_section(settings: Settings, prefix: str, base: EngineConfig) -> list[str]:
    """What ``threadline doctor`` says about one ``[channels."<prefix>"]`` section: the
    effective settings of its threads, each with where it comes from."""
    channel = settings.channels[prefix]
    config = Channels(settings, base).config(prefix)
    own = "this section"
    lines = [f'channel "{prefix}":']
    lines.append(
        f"  model: {config.model or settings.model} ({own if channel.model else 'global'})"
    )
    if channel.models is not None:
        lines.append(f"  /threadline model may choose: {', '.join(channel.models) or 'nothing'}")
    if channel.system_prompt is None:
        lines.append("  system prompt: the global one")
    else:
        how = (
            "replaces the global one"
            if channel.system_prompt_mode == "replace"
            else "added to the global one"
        )
        lines.append(f"  system prompt: {len(channel.system_prompt):,} characters, {how}")
    offered = "all" if channel.offer_tools is None else ", ".join(channel.offer_tools) or "none"
    lines.append(
        f"  tools offered: {offered}"
        + (f"; hidden: {', '.join(channel.hide_tools)}" if channel.hide_tools else "")
    )
    if channel.mcp_servers is not None:
        lines.append(f"  MCP servers: {', '.join(channel.mcp_servers) or 'none'}")
    own = config.model or settings.model
    limits = ", ".join(
        f"{f} {getattr(config, f)}{_source(settings, channel, own, f)}"
        for f in LIMITS
        if getattr(config, f) is not None
    )
    lines.append(f"  limits: {limits}")
    sampled = [
        f"{f} {value}{_source(settings, channel, own, f)}"
        for f in SAMPLING
        if (value := getattr(config.sampling, f)) is not None
    ]
    lines.append(f"  sampling: {', '.join(sampled) or 'the server defaults'}")
    during = channel.during_run or settings.during_run
    lines.append(f"  during a run: {during}{'' if channel.during_run else ' (global)'}")
    replies = channel.thread_replies or settings.thread_replies
    lines.append(
        f"  thread replies: {REPLIES[replies]}{'' if channel.thread_replies else ' (global)'}"
    )
    return lines


def _source(settings: Settings, channel: ChannelSettings, model: str, field: str) -> str:
    """Where a channel's effective value comes from, when not from its own section."""
    if getattr(channel, field, None) is not None:
        return ""
    own = settings.per_model.get(model)
    if own is not None and getattr(own, field, None) is not None:
        return f' (per_model "{model}")'
    return " (global)"


REPLIES = {
    "all": "every message of a thread the bot is in",
    "mentions": "only messages that mention the bot (the others are read with the next mention)",
}
"""``thread_replies`` in words, for ``threadline doctor``."""
