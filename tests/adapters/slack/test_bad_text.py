"""Text that is not valid Unicode (a lone surrogate, which JSON may carry as ``\\ud800``) is
answered: the bad code point becomes U+FFFD where it comes in."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from bot.llm.messages import UserMessage
from tests.adapters.slack.conftest import slack_world
from tests.fakes.documents import text_pdf
from tests.fakes.scripted_model import ScriptedModel, text
from tests.fakes.slack import MENTION


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_message_with_a_lone_surrogate_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Literal["socket", "http"]
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} bad \ud800 end")
        replies = await world.answered(root)
        assert [m.shown for m in replies] == ["Ada said: bad \ufffd end"]
        asked = world.model.requests[0].messages[-1]
        assert isinstance(asked, UserMessage) and asked.text == "bad \ufffd end"


async def test_a_pdf_whose_text_reads_as_a_lone_surrogate_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([text("Read it.")])
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        pdf = text_pdf("Total: 12 A", to_unicode={"A": "D800"})  # a broken font map
        shared = world.fake.files.share("odd.pdf", pdf, "application/pdf")
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} read", files=[shared])
        assert [m.shown for m in await world.answered(root, 1, 30.0)] == ["Read it."]
        asked = model.requests[0].messages[-1]
        assert isinstance(asked, UserMessage) and "Total: 12 \ufffd" in asked.text
        (workspace,) = (tmp_path / "data" / "workspaces").iterdir()
        assert "Total: 12 \ufffd" in (workspace / "odd.pdf.txt").read_text()
