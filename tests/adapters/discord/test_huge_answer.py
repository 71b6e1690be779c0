"""A huge answer on Discord: its first part in the thread, the rest as an ``answer.md``
attachment, instead of thousands of messages posted at Discord's pace."""

from __future__ import annotations

import pytest

from tests.adapters.discord.conftest import Discord
from tests.fakes.discord import cdn
from tests.fakes.scripted_model import ScriptedModel, text


def answer(lines: int) -> str:
    return "".join(
        f"line {n:05d}: the same words again, to make a long answer\n" for n in range(lines)
    )


def pieces(whole: str, size: int = 1_000) -> list[str]:
    return [whole[start : start + size] for start in range(0, len(whole), size)]


async def test_an_answer_past_the_limit_continues_in_an_attachment(discord_world: Discord) -> None:
    d = discord_world
    whole = answer(20_000)  # 1.1 MB: about 600 Discord messages without the file
    # 3,000 characters, two messages: within the channel's five posts per five seconds, which
    # discord.py waits out in real time
    await d.start(model=ScriptedModel([text(*pieces(whole, 20_000))]), answer_file_after=3_000)
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("everything")))
    await d.wait_for(lambda: any(m.attachments for m in d.fake.world.in_channel(thread.id)))
    await d.idle()

    messages = d.fake.world.in_channel(thread.id)
    *texts, posted = messages
    (attachment,) = posted.attachments
    assert attachment["filename"] == "answer.md"
    cut = whole.index("\n", 3_000) + 1
    assert d.fake.cdn.data_of(attachment) == whole[cut:].encode()
    assert len(texts) == 2  # 3,000 characters at 1,900 a message
    shown = d.fake.world.shown(thread.id)
    assert shown[-2].endswith(
        f"_… the rest of the answer ({len(whole) - cut:,} more characters) is in answer.md, below._"
    )


async def test_an_attachment_discord_refuses_is_said(
    discord_world: Discord, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = discord_world
    monkeypatch.setattr(cdn, "MAX_UPLOAD", 10_000)
    whole = answer(500)  # 28,000 characters: the rest is over the fake's upload cap
    await d.start(model=ScriptedModel([text(*pieces(whole))]), answer_file_after=3_000)
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("everything")))
    await d.wait_for(lambda: any("could not be posted" in s for s in d.fake.world.shown(thread.id)))
    await d.idle()
    shown = d.fake.world.shown(thread.id)
    assert shown[-2].endswith("is in answer.md, below._")
    assert shown[-1].startswith("⚠️ The rest of the answer could not be posted as answer.md:")
    assert not any(m.attachments for m in d.fake.world.in_channel(thread.id))
