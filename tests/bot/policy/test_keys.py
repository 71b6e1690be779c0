"""Thread keys are matched part by part everywhere a rule names threads: ``[access]`` lists,
``[channels."…"]`` sections (and what reads them: tools, MCP servers), adapters' key prefixes."""

from __future__ import annotations

import pytest

from adapters.discord.adapter import KEY_PREFIX as DISCORD_PREFIX
from adapters.discord.identity import is_direct
from adapters.slack.adapter import _direct as slack_direct
from bot.api.inbound import ThreadKey
from bot.config import Settings
from bot.infra.clock import ManualClock
from bot.policy import keys
from bot.thread.reach import Surfaces
from tests.fakes.surface import RecordingSurface


@pytest.mark.parametrize(
    ("rule", "key", "covered"),
    [
        ("slack:T1:C0GENERAL", "slack:T1:C0GENERAL:1.0", True),
        ("slack:T1:C0GENERAL:", "slack:T1:C0GENERAL:1.0", True),
        ("slack:T1:C0GENERAL", "slack:T1:C0GENERALX:1.0", False),
        ("slack:T1:C0GENERAL:", "slack:T1:C0GENERALX:1.0", False),
        ("slack:T1:C0GENERAL:1.0", "slack:T1:C0GENERAL:1.0", True),
        ("slack:T1:C0GENERAL:1.0", "slack:T1:C0GENERAL:1.01", False),
        ("slack", "slack:T1:C0GENERAL:1.0", True),
        ("slack:T", "slack:T1:C0GENERAL:1.0", False),
        ("discord:42", "discord:42:7", True),
        ("discord:4", "discord:42:7", False),
        ("discord:dm", "discord:dm:9", True),
        ("playground:", "playground:abc", True),
        ("", "slack:T1:C1:1.0", False),
    ],
)
def test_a_rule_covers_keys_by_whole_parts(rule: str, key: str, covered: bool) -> None:
    assert keys.covers(rule, key) is covered


def test_the_most_specific_rule_names_the_most_parts() -> None:
    rules = ["slack", "slack:T1:C0OPEN", "slack:T1:C0OPENX:", "slack:T1"]
    assert keys.most_specific(rules, "slack:T1:C0OPEN:1.0") == "slack:T1:C0OPEN"
    assert keys.most_specific(rules, "slack:T1:C0OPENX:1.0") == "slack:T1:C0OPENX:"
    assert keys.most_specific(rules, "slack:T1:C0OPENY:1.0") == "slack:T1"
    assert keys.most_specific(rules, "discord:1:2") is None


def _unreachable(key: ThreadKey) -> RecordingSurface:
    raise AssertionError(f"no surface is made for {key}")


def test_the_adapters_say_which_threads_are_direct_messages() -> None:
    surfaces = Surfaces()
    surfaces.register("slack:T1:", _unreachable, direct=slack_direct)
    surfaces.register(DISCORD_PREFIX, _unreachable, direct=is_direct)
    assert surfaces.direct("discord:dm:9") and surfaces.direct("slack:T1:D0DM:1.0")
    assert not surfaces.direct("discord:42:7") and not surfaces.direct("slack:T1:C0DM:1.0")
    assert not surfaces.direct("playground:D1") and not surfaces.direct("slack:T2:D0DM:1.0")


def test_a_prefix_ends_at_a_whole_part() -> None:
    assert keys.as_prefix("slack:T1:C1") == keys.as_prefix("slack:T1:C1:") == "slack:T1:C1:"


def test_a_channel_section_applies_to_its_channel_only() -> None:
    settings = Settings(
        _env_file=None,
        channels={"slack:T1:C0OPEN": {"model": "open-model"}, "discord:42": {"model": "guild"}},
    )
    assert (found := settings.channel("slack:T1:C0OPEN:1.0")) and found.model == "open-model"
    assert settings.channel("slack:T1:C0OPENX:1.0") is None
    assert (found := settings.channel("discord:42:7")) and found.model == "guild"
    assert settings.channel("discord:420:7") is None


def test_surfaces_are_found_by_whole_parts() -> None:
    surfaces = Surfaces()
    made: list[str] = []

    def factory(key: ThreadKey) -> RecordingSurface:
        made.append(key)
        return RecordingSurface(ManualClock(), thread_key=key)

    surfaces.register("slack:T1:", factory, channel_of=lambda key: "slack:T1:channel")
    assert surfaces.surface_for(ThreadKey("slack:T1:C1:1.0")) is not None
    assert surfaces.surface_for(ThreadKey("slack:T10:C1:1.0")) is None
    assert surfaces.channel_of("slack:T10:C1:1.0") == "slack:T10:C1:1.0"
    assert surfaces.channel_of("slack:T1:C1:1.0") == "slack:T1:channel"
    assert made == ["slack:T1:C1:1.0"]
