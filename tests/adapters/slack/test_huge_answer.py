"""A huge answer on Slack: its first part in the thread, the rest uploaded as ``answer.md``
(the external upload flow), instead of hundreds of messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.slack.conftest import slack_world
from tests.fakes.scripted_model import ScriptedModel, text
from tests.fakes.slack import MENTION

WAIT = 30.0
NATIVE = {"slack_streaming": "native", "slack_stream_appends_per_minute": 6000.0}


def answer(lines: int) -> str:
    return "".join(
        f"line {n:05d}: the same words again, to make a long answer\n" for n in range(lines)
    )


def pieces(whole: str, size: int = 1_000) -> list[str]:
    return [whole[start : start + size] for start in range(0, len(whole), size)]


@pytest.mark.parametrize("how", [{}, NATIVE], ids=["edits", "native"])
async def test_an_answer_past_the_limit_continues_in_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: dict[str, Any]
) -> None:
    whole = answer(2_000)  # 118,000 characters: 12 Slack messages without the file
    model = ScriptedModel([text(*pieces(whole))])
    async with slack_world(tmp_path, monkeypatch, model=model, **how) as world:
        fake = world.fake
        root = await fake.say("UADA", "CGENERAL", f"{MENTION} everything, please")
        await fake.wait_for(lambda: bool(fake.files.shared), WAIT)
        await world.idle()

        replies = fake.replies("CGENERAL", root.ts)
        *shown, file_message = [m.shown for m in replies]
        assert file_message == ""  # the file's own message, below the reply
        cut = whole.index("\n", 12_000) + 1  # the line being written is finished
        assert len(shown) == 2  # 12,000 characters: two Slack messages
        assert shown[-1].endswith(
            f"_… the rest of the answer ({len(whole) - cut:,} more characters) is in answer.md, "
            "below._"
        )
        (shared,) = fake.files.shared
        assert (shared.channel, shared.thread_ts, shared.name) == ("CGENERAL", root.ts, "answer.md")
        assert shared.data.decode() == whole[cut:]
        assert "".join(shown).replace("\n", "").startswith(whole[:cut].replace("\n", ""))
        assert fake.count("files.completeUploadExternal") == 1


async def test_the_limit_is_a_setting_and_a_shorter_answer_has_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = answer(100)  # 5,600 characters
    model = ScriptedModel([text(whole[:4_900]), text(*pieces(whole))])
    async with slack_world(tmp_path, monkeypatch, model=model, answer_file_after=5_000) as world:
        fake = world.fake
        root = await fake.say("UADA", "CGENERAL", f"{MENTION} a bit")
        assert [m.shown for m in await world.answered(root)] == [whole[:4_900].rstrip()]
        assert fake.files.shared == []

        await fake.say("UADA", "CGENERAL", "a bit more", thread_ts=root.ts)
        await fake.wait_for(lambda: bool(fake.files.shared), WAIT)
        await world.idle()
        (shared,) = fake.files.shared
        assert shared.data.decode() == whole[whole.index("\n", 5_000) + 1 :]
        assert fake.replies("CGENERAL", root.ts)[-2].shown.endswith("is in answer.md, below._")
