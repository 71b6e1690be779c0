"""The model's settings in plain words for ``threadline doctor``: the effective context window,
answer cap and sampling globally and for each ``[per_model."NAME"]`` table and channel section,
and what looks wrong among them (a warning, never a refusal: the values are valid)."""

from __future__ import annotations

from collections.abc import Iterator

from bot.config import Settings
from bot.engine.states import EngineConfig
from bot.engine.window import margin
from bot.thread.settings import SAMPLING, Channels

MAX_USUAL_TEMPERATURE = 2.0
"""OpenAI's highest temperature (most servers follow it; some, vLLM among them, take more)."""


def describe_models(settings: Settings, base: EngineConfig) -> list[str]:
    """The global model settings, then each ``[per_model."NAME"]`` table's effective ones."""
    channels = Channels(settings, base)
    lines = [f"model settings: {effective(channels.model_config(settings.model))}"]
    for name in sorted(settings.per_model):
        lines.append(f'per_model "{name}": {effective(channels.model_config(name))}')
    return lines


def effective(config: EngineConfig) -> str:
    cap = config.max_output_tokens
    answers = (
        f"answers up to {cap:,} tokens (fewer when the prompt leaves less room)"
        if cap is not None
        else "answers as long as the server allows"
    )
    sampled = [
        f"{f} {value}" for f in SAMPLING if (value := getattr(config.sampling, f)) is not None
    ]
    return (
        f"context window {config.context_window:,} tokens, {answers}; "
        f"sampling: {', '.join(sampled) or 'the server defaults'}"
    )


def model_warnings(settings: Settings, base: EngineConfig) -> list[str]:
    """What is valid but likely a mistake, said once: where a value that causes it is set."""
    channels = Channels(settings, base)
    found: list[str] = []
    for where, config, own in _layers(settings, channels):
        found.extend(
            f"{where}: {text}" for fields, text in _problems(config) if own is None or fields & own
        )
    found.extend(_unused_tables(settings))
    return found


def _layers(
    settings: Settings, channels: Channels
) -> Iterator[tuple[str, EngineConfig, set[str] | None]]:
    """Each layer's name, its effective settings and the fields it sets itself (None: all)."""
    yield "global", channels.model_config(settings.model), None
    for name, table in sorted(settings.per_model.items()):
        yield f'per_model "{name}"', channels.model_config(name), table.model_fields_set
    for prefix, section in sorted(settings.channels.items()):
        yield f'channel "{prefix}"', channels.config(prefix), section.model_fields_set


def _problems(config: EngineConfig) -> Iterator[tuple[set[str], str]]:
    sampling = config.sampling
    if sampling.temperature is not None and sampling.temperature > MAX_USUAL_TEMPERATURE:
        yield (
            {"temperature"},
            f"temperature {sampling.temperature:g} is above {MAX_USUAL_TEMPERATURE:g}, "
            "which OpenAI and most servers refuse",
        )
    if sampling.temperature is not None and sampling.top_p is not None:
        yield (
            {"temperature", "top_p"},
            "both temperature and top_p are set; OpenAI advises setting one of them",
        )
    cap, window = config.max_output_tokens, config.context_window
    if cap is not None and cap > window - margin(window):
        yield (
            {"max_output_tokens", "context_window", "model"},
            f"max_output_tokens {cap:,} does not fit the context window of {window:,} tokens; "
            "each answer gets what the prompt leaves",
        )


def _unused_tables(settings: Settings) -> Iterator[str]:
    """Tables named after no model a setting names: a misspelt name never applies."""
    named = {settings.model, *settings.models}
    for channel in settings.channels.values():
        named.update([channel.model] if channel.model else [])
        named.update(channel.models or ())
    for name in sorted(set(settings.per_model) - named):
        when = (
            "it never applies (not among the models)"
            if settings.models
            else "it applies only where /threadline model chooses it"
        )
        yield f'per_model "{name}" names a model no setting uses: {when}'
