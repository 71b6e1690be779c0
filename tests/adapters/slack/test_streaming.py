"""Streaming within Slack's limits: 429s, message length, the thread status."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.slack.surface import MAX_CHARS
from tests.adapters.slack.conftest import HeldModel, slack_world
from tests.fakes.scripted_model import ScriptedModel, text
from tests.fakes.slack import MENTION, FakeSlack


def fences_balanced(shown: str) -> bool:
    return sum(1 for line in shown.split("\n") if line.startswith("```")) % 2 == 0


def long_answer(paragraphs: int, code_lines: int) -> list[str]:
    """Prose, then a long fenced code block, then prose: pieces of a streamed answer."""
    pieces = [
        f"Paragraph {i}: " + "words that fill the reply " * 12 + "\n\n" for i in range(paragraphs)
    ]
    pieces.append("```python\n")
    pieces += [
        f"value_{i} = compute({i})  # a line of code that is long enough\n"
        for i in range(code_lines)
    ]
    pieces.append("```\n\nThat is all.")
    return pieces


async def test_a_429_storm_on_edits_still_lands_the_exact_final_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(ScriptedModel([text("First words", " and the rest of it.")]), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        world.fake.limits.storm("chat.update", 4, retry_after=0.2)
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} go")
        await world.fake.wait_for(lambda: bool(world.fake.replies("CGENERAL", root.ts)))
        model.release()
        final = "First words and the rest of it."
        # the final lands by an edit once the 429s are waited out, or, when that wait is longer
        # than an edit's turn, as a new message whose draft is then deleted: one copy either way
        await world.fake.wait_for(
            lambda: [m.shown for m in world.fake.replies("CGENERAL", root.ts)] == [final]
        )
        assert world.fake.limits.rejected["chat.update"] >= 1
        assert world.fake.limits.violations["chat.update"] == 0  # every Retry-After was honoured


async def test_a_429_on_posting_is_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        world.fake.limits.storm("chat.postMessage", 2, retry_after=0.2)
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} post it")
        replies = await world.answered(root)
        assert [m.shown for m in replies] == ["Ada said: post it"]
        assert world.fake.limits.rejected["chat.postMessage"] == 2
        assert world.fake.limits.violations["chat.postMessage"] == 0


async def test_the_sdk_does_not_retry_a_429_behind_the_presenters_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.slack.parse import thread_key
    from bot.errors import SurfaceRateLimited

    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hi")
        await world.answered(root)
        surface = world.adapter.surface(thread_key("T0FAKE", "CGENERAL", root.ts))
        world.fake.limits.storm("chat.postMessage", 1, retry_after=7)
        before = world.fake.count("chat.postMessage")
        with pytest.raises(SurfaceRateLimited) as error:
            await surface.post("hello")
        assert error.value.retry_after == 7.0
        assert world.fake.count("chat.postMessage") == before + 1  # one request, no retry inside


async def test_a_long_answer_continues_in_new_messages_without_breaking_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = long_answer(paragraphs=25, code_lines=200)
    model = ScriptedModel([text(*pieces)])
    no_file = {"answer_file_after": 1_000_000}  # all of it in messages, as below the limit
    async with slack_world(tmp_path, monkeypatch, model=model, **no_file) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} write a lot")
        await world.answered(root, 2)
        replies = world.fake.replies("CGENERAL", root.ts)
        assert len(replies) >= 2
        assert all(len(m.shown) <= MAX_CHARS and fences_balanced(m.shown) for m in replies)
        assert replies[1].shown.startswith("```python") or "```python" in replies[0].shown
        joined = "\n".join(m.shown for m in replies).replace("```\n```python\n", "")
        assert "value_199 = compute(199)" in joined and joined.endswith("That is all.")


async def test_msg_too_long_makes_the_presenter_split_tighter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = long_answer(paragraphs=10, code_lines=80)
    # a workspace that answers msg_too_long near 4,000; each refused post counts against the
    # per-channel posting limit, so its window is scaled down to keep the test short
    fake = FakeSlack(markdown_limit=4_000, time_scale=10)
    async with slack_world(
        tmp_path, monkeypatch, model=ScriptedModel([text(*pieces)]), fake=fake
    ) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} long one")
        await world.answered(root, 2)
        replies = world.fake.replies("CGENERAL", root.ts)
        assert len(replies) >= 3
        assert all(len(m.shown) <= 4_000 and fences_balanced(m.shown) for m in replies)
        assert any(c.outcome == "msg_too_long" for c in world.fake.api.calls)
        joined = "".join(m.shown for m in replies)
        assert "value_79 = compute(79)" in joined and joined.endswith("That is all.")


async def test_the_thread_status_shows_while_thinking_and_is_cleared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(ScriptedModel([text("", "Done.")]), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} think")
        await world.fake.wait_for(lambda: world.fake.workspace.status("CGENERAL", root.ts) != "")
        assert world.fake.workspace.status("CGENERAL", root.ts) == "thinking…"
        model.release()
        await world.answered(root)
        await world.fake.wait_for(lambda: world.fake.workspace.status("CGENERAL", root.ts) == "")


async def test_where_slack_refuses_the_status_nothing_is_shown_and_it_is_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.slack.parse import thread_key

    fake = FakeSlack()
    fake.add_channel("CNOSTATUS", "no-status", status_allowed=False)
    model = HeldModel(ScriptedModel([text("", "One.")]), hold_after=1)

    def status_calls() -> list[str]:
        return [c.outcome for c in fake.api.calls if c.method == "assistant.threads.setStatus"]

    async with slack_world(tmp_path, monkeypatch, fake=fake, model=model) as world:
        first = await fake.say("UADA", "CNOSTATUS", f"{MENTION} one")
        await fake.wait_for(lambda: status_calls() == ["not_allowed"])
        model.release()
        assert [m.shown for m in await world.answered(first)] == ["One."]
        assert fake.status_history("CNOSTATUS", first.ts) == [""]  # only the reply's own clearing

        surface = world.adapter.surface(thread_key("T0FAKE", "CNOSTATUS", first.ts))
        await surface.set_status("thinking…")
        await surface.set_status(None)
        assert status_calls() == ["not_allowed"]  # the refusal is remembered for the channel
