"""``read_channel`` naming another channel, through the core: read when the platform finds it
and says the person asking is a member and the policy allows it; otherwise a refusal the model
reads, with nothing read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.api.channel import ChannelMessage, OtherChannel
from bot.llm.messages import ToolResult
from tests.bot.test_approvals import World
from tests.fakes.scripted_model import call, step, text

OPS = "slack:T1:C9"


@dataclass
class Reader:
    reads: list[float | None] = field(default_factory=list)

    async def recent(self, since: float | None, limit: int) -> Sequence[ChannelMessage]:
        self.reads.append(since)
        return [ChannelMessage("Grace", "Restarted the queue", 1_000_000.0, "https://x/1")]


@dataclass
class Finder:
    reader: Reader
    members: set[str]
    asked: list[tuple[str, str]] = field(default_factory=list)

    async def find(self, ref: str, asker: str) -> OtherChannel | str:
        self.asked.append((ref, asker))
        if ref not in ("#ops", "<#C9>"):
            return f"there is no channel {ref} that Threadline can see"
        if asker not in self.members:
            return "the person asking is not a member of #ops"
        return OtherChannel(OPS, "#ops", self.reader)


async def result_of(tmp_path: Path, ref: str, finder: bool = True, **settings: Any) -> str:
    world = World(tmp_path, **settings)
    reader = Reader()
    if finder:
        world.surface.other_channels = Finder(reader, {"slack:U1"})  # type: ignore[attr-defined]
    world.model.steps = [step(call("read_channel", {"channel": ref})), text("Done.")]
    await world.core.start()
    try:
        await world.say("what happened in #ops?")
    finally:
        await world.core.aclose()
    result = world.model.requests[-1].messages[-1]
    assert isinstance(result, ToolResult)
    if "refused" in result.content or result.is_error:
        assert reader.reads == []  # nothing was read
    return result.content


async def test_another_channel_is_read_for_a_member(tmp_path: Path) -> None:
    found = await result_of(tmp_path, "#ops")
    assert "#ops's 1 most recent messages" in found and "Grace (https://x/1)" in found


@pytest.mark.parametrize(
    ("ref", "settings", "finder", "said"),
    [
        ("#leads", {}, True, "refused: there is no channel #leads"),
        ("#ops", {"access": {"deny_channels": [OPS]}}, True, "may not read #ops for Alice"),
        ("#ops", {"access": {"channels": ["slack:T1:C1"]}}, True, "may not read #ops"),
        ("#ops", {}, False, "only this thread's channel can be read here"),
    ],
)
async def test_another_channel_is_refused_with_the_reason(
    tmp_path: Path, ref: str, settings: dict[str, Any], finder: bool, said: str
) -> None:
    assert said in await result_of(tmp_path, ref, finder, **settings)
