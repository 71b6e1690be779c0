"""Mentioned for the first time inside a thread that existed before, the bot reads what was said
there (``conversations.replies`` on the fake Slack), once, and the model reads it with the
mention: authors named, the bot's own words left out, bounded in count."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.llm.messages import UserMessage
from bot.llm.wire import user_content
from bot.thread.history import HEAD
from tests.adapters.slack.conftest import slack_world
from tests.fakes.slack import MENTION, FakeSlack

WAIT = 30.0


def first_user_message(requests: list) -> UserMessage:  # type: ignore[type-arg]
    return next(m for m in requests[0].messages if isinstance(m, UserMessage))


async def test_the_earlier_messages_of_a_thread_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        fake = world.fake
        root = await fake.say("UADA", "CGENERAL", "The deploy failed again <@UGRACE>")
        await fake.say(
            "UGRACE", "CGENERAL", "Same error as yesterday: disk full", thread_ts=root.ts
        )
        await fake.other_bot_says("CGENERAL", "Alert: /var is 100% full", thread_ts=root.ts)
        await fake.say("UADA", "CGENERAL", f"{MENTION} what should we do?", thread_ts=root.ts)
        await world.answered(root, 1, WAIT)

        asked = first_user_message(world.model.requests)
        assert asked.text == "what should we do?"
        assert user_content(asked) == "\n".join(
            [
                HEAD,
                "[Ada]: The deploy failed again @Grace",
                "[Grace]: Same error as yesterday: disk full",
                "[bot (an app)]: Alert: /var is 100% full",
                "",
                "[Ada]: what should we do?",
            ]
        )
        assert fake.count("conversations.replies") == 1

        await fake.say("UGRACE", "CGENERAL", "and after that?", thread_ts=root.ts)
        await world.answered(root, 2, WAIT)
        assert fake.count("conversations.replies") == 1  # later turns need no re-read
        later = [m for m in world.model.requests[-1].messages if isinstance(m, UserMessage)]
        assert [m.earlier is not None for m in later] == [True, False]  # kept in the transcript


async def test_a_long_thread_gives_its_first_and_most_recent_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch, thread_history_messages=3) as world:
        fake = world.fake
        root = await fake.say("UADA", "CGENERAL", "topic")
        for n in range(6):
            await fake.say("UGRACE", "CGENERAL", f"reply {n}", thread_ts=root.ts)
        await fake.say("UADA", "CGENERAL", f"{MENTION} sum it up", thread_ts=root.ts)
        await world.answered(root, 1, WAIT)
        earlier = first_user_message(world.model.requests).earlier
        assert earlier == "\n".join(
            [
                HEAD,
                "[Ada]: topic",
                "(… 4 earlier messages not shown)",
                "[Grace]: reply 4",
                "[Grace]: reply 5",
            ]
        )


async def test_a_page_that_stops_short_of_the_mention_says_more_were_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An app outside the Marketplace gets 15 messages a page: the rest is not made up."""
    fake = FakeSlack()
    fake.api.replies_page_max = 15
    async with slack_world(tmp_path, monkeypatch, fake=fake, thread_history_messages=3) as world:
        root = await fake.say("UADA", "CGENERAL", "topic")
        for n in range(20):
            await fake.say("UGRACE", "CGENERAL", f"reply {n}", thread_ts=root.ts)
        await fake.say("UADA", "CGENERAL", f"{MENTION} sum it up", thread_ts=root.ts)
        await world.answered(root, 1, WAIT)
        earlier = first_user_message(world.model.requests).earlier
        assert earlier == "\n".join(
            [
                HEAD,
                "[Ada]: topic",
                "(… 12 earlier messages not shown)",
                "[Grace]: reply 12",
                "[Grace]: reply 13",
                "(… earlier messages not shown)",
            ]
        )


async def test_the_character_bound_says_how_many_older_messages_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch, thread_history_chars=len(HEAD) + 80) as world:
        fake = world.fake
        root = await fake.say("UADA", "CGENERAL", "topic")
        for n in range(6):
            await fake.say("UGRACE", "CGENERAL", f"reply {n} " + "x" * 20, thread_ts=root.ts)
        await fake.say("UADA", "CGENERAL", f"{MENTION} sum it up", thread_ts=root.ts)
        await world.answered(root, 1, WAIT)
        earlier = first_user_message(world.model.requests).earlier
        tail = "x" * 20
        assert earlier == "\n".join(
            [
                HEAD,
                "(… 5 earlier messages not shown)",
                f"[Grace]: reply 4 {tail}",
                f"[Grace]: reply 5 {tail}",
            ]
        )


async def test_a_mention_that_starts_a_thread_reads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        await world.answered(root, 1, WAIT)
        assert first_user_message(world.model.requests).earlier is None
        assert world.fake.count("conversations.replies") == 0
