"""Malformed gateway events are skipped on the same connection; malformed clicks and clicks in
threads nobody knows never break the client."""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.discord.listeners import CLICK_FAILED
from tests.adapters.discord.conftest import WITHIN, Discord
from tests.fakes.discord import Channel, payloads
from tests.fakes.discord.model import Interaction, Message
from tests.fakes.discord.rest import EPHEMERAL
from tests.fakes.discord.server import COMPONENT

SECRET = "payload-secret-7f3a9c"
MARK = "THREADLINE_TEST_MARK"
STOP_BUTTON = [
    {
        "type": 1,
        "components": [{"type": 2, "style": 4, "label": "Stop", "custom_id": "tl:stop:run-1"}],
    }
]
EXAMPLES = 40


def message_payload(d: Discord, channel: Channel, content: str = "just chatting") -> dict[str, Any]:
    """A MESSAGE_CREATE of Bob's in ``channel`` (not a message the fake holds)."""
    world = d.fake.world
    record = Message(
        world.snowflake(), channel.id, channel.guild_id, d.bob, content, world.clock.now()
    )
    return payloads.message(record, world, gateway=True)


def thread_payload(d: Discord) -> dict[str, Any]:
    """A THREAD_CREATE of a thread the fake does not hold."""
    world = d.fake.world
    record = Channel(
        world.snowflake(),
        11,
        "made up",
        d.guild.id,
        d.channel.id,
        d.bob.id,
        created_at=world.clock.now(),
    )
    return {**payloads.channel(record, world), "newly_created": True}


def click_payload(d: Discord, on: Message, custom_id: str = "tl:stop:run-1") -> dict[str, Any]:
    """An INTERACTION_CREATE of a click on ``on`` whose token the fake never issued."""
    world = d.fake.world
    record = Interaction(
        world.snowflake(),
        "never-issued",
        COMPONENT,
        on.channel_id,
        d.guild.id,
        d.ada,
        {"custom_id": custom_id, "component_type": 2},
        on.id,
        world.clock.now(),
    )
    return payloads.interaction(record, world)


async def answered_thread(d: Discord, text: str = "hi") -> tuple[Channel, Message]:
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention(text)))
    await d.shows(thread, [f"Ada L. said: {text}"])
    return thread, d.fake.world.in_channel(thread.id)[-1]


async def test_each_malformed_dispatch_is_skipped_and_the_session_goes_on(
    running: Discord, caplog: pytest.LogCaptureFixture
) -> None:
    d = running
    thread, reply = await answered_thread(d)
    no_author = {**message_payload(d, thread), "author": None}
    no_limit = click_payload(d, reply)
    del no_limit["attachment_size_limit"]
    wrong = {**message_payload(d, thread), "id": SECRET, "content": 42, "mentions": SECRET}
    sent = [
        ("MESSAGE_CREATE", {}),
        ("MESSAGE_CREATE", no_author),
        ("MESSAGE_CREATE", None),
        ("MESSAGE_CREATE", wrong),
        ("THREAD_CREATE", {"id": str(d.fake.world.snowflake())}),
        ("GUILD_CREATE", {"id": "not a number", "unavailable": False}),
        (
            "GUILD_CREATE",
            {
                **payloads.guild_create(d.guild, d.fake.world),
                "id": str(d.fake.world.snowflake()),
                "roles": SECRET,
            },
        ),
        ("INTERACTION_CREATE", no_limit),
        ("INTERACTION_CREATE", {**click_payload(d, reply), "type": 3, "data": None}),
    ]
    with caplog.at_level(logging.WARNING, logger="adapters.discord"):
        for event, data in sent:
            d.fake.gateway.send_raw(event, data)
        d.fake.say(thread, d.ada, "still there?")
        await d.shows(thread, ["Ada L. said: hi", "Ada L. said: still there?"])

    assert len(d.fake.gateway.sessions) == 1 and len(d.fake.gateway.connections) == 1
    assert d.fake.gateway.connections[0].close_code is None  # no IDENTIFY, no RESUME, no drop
    assert d.adapter is not None
    assert d.adapter.listeners.skipped == {
        "MESSAGE_CREATE": 4,
        "THREAD_CREATE": 1,
        "GUILD_CREATE": 2,
        "INTERACTION_CREATE": 2,
    }
    skipped = [r.getMessage() for r in caplog.records if "could not be read" in r.getMessage()]
    assert len(skipped) == len(sent)
    assert (
        "INTERACTION_CREATE" in skipped[7]
        and "'attachment_size_limit' (a missing field)" in skipped[7]
    )
    assert SECRET not in caplog.text
    assert "just chatting" not in caplog.text


async def test_frames_that_do_not_decode_are_skipped_and_the_connection_is_kept(
    running: Discord, caplog: pytest.LogCaptureFixture
) -> None:
    d = running
    thread, _ = await answered_thread(d)
    frames: list[str | bytes] = [
        b"\xff\xfe not UTF-8 " + SECRET.encode(),  # inflated, it is not text
        f"not JSON {SECRET}",
        "[]",
        "null",
        '"a string"',
        "[" * 100_000 + "]" * 100_000,  # deeper than any JSON reader goes
        '{"op": 0, "t": "MESSAGE_CREATE", "s": 1, "d": ' + "[" * 5000 + "]" * 5000 + "}",
    ]
    with caplog.at_level(logging.WARNING, logger="adapters.discord"):
        for frame in frames:
            d.fake.gateway.send_frame(frame)
        d.fake.say(thread, d.ada, "still there?")
        await d.shows(thread, ["Ada L. said: hi", "Ada L. said: still there?"])

    assert len(d.fake.gateway.sessions) == 1 and len(d.fake.gateway.connections) == 1
    assert d.fake.gateway.connections[0].close_code is None  # never dropped nor identified again
    assert d.adapter is not None
    assert sum(d.adapter.listeners.skipped.values()) == len(frames)
    assert SECRET not in caplog.text


async def test_a_click_nobody_can_read_or_place_gets_a_private_word_and_breaks_nothing(
    discord_world: Discord,
) -> None:
    d = discord_world
    world = d.fake.world
    # Posted by an earlier installation, in a thread archived since: discord.py has never seen
    # the thread, and the core has no session there.
    old = world.add_thread(d.channel, "from last year", d.bob)
    card = world.create_message(
        old.id,
        world.bot,
        "An old card",
        components=[
            {
                "type": 1,
                "components": [
                    {
                        "type": 2,
                        "style": 1,
                        "label": "Approve",
                        "custom_id": "tl:approve:unknown-request",
                    },
                    {"type": 2, "style": 4, "label": "Stop", "custom_id": "tl:stop:no-such-run"},
                ],
            }
        ],
    )
    world.set_archived(old.id, True)
    await d.start()
    thread, reply = await answered_thread(d, "hello")

    stray = d.fake.click(card, "tl:approve:unknown-request", d.ada)
    stopped = d.fake.click(card, "tl:stop:no-such-run", d.ada)
    await d.wait_for(lambda: stray.followups and stopped.followups)

    for click in (stray, stopped):
        assert click.callbacks == [{"type": 6}]  # acknowledged
        assert click.followups[0]["flags"] == EPHEMERAL and click.followups[0]["content"]
    assert (
        world.messages[card.id].content == "An old card"
    )  # nothing decided on a card nobody knows
    assert world.messages[card.id].components == []  # the Stop click took its leftover buttons away
    d.fake.say(thread, d.ada, "and now?")
    await d.shows(thread, ["Ada L. said: hello", "Ada L. said: and now?"])
    assert len(d.fake.gateway.connections) == 1


async def test_a_click_without_a_channel_is_told_it_failed(running: Discord) -> None:
    d = running
    world = d.fake.world
    thread, _ = await answered_thread(d)
    card = world.create_message(thread.id, world.bot, "A card", components=STOP_BUTTON)
    click = Interaction(
        world.snowflake(),
        "issued-token",
        COMPONENT,
        thread.id,
        d.guild.id,
        d.ada,
        {"custom_id": "tl:stop:run-1", "component_type": 2},
        card.id,
        world.clock.now(),
    )
    world.interactions[click.token] = click  # the fake accepts its answers
    raw = payloads.interaction(click, world)
    del raw["channel_id"], raw["channel"]
    d.fake.gateway.send_raw("INTERACTION_CREATE", raw)
    await d.wait_for(lambda: click.followups)
    assert click.callbacks == [{"type": 6}]
    assert [(f["content"], f["flags"]) for f in click.followups] == [(CLICK_FAILED, EPHEMERAL)]
    assert len(d.fake.gateway.connections) == 1


# --- generated payloads ---------------------------------------------------------------------------

MISSING = object()
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
JSON = st.recursive(
    LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def paths(payload: dict[str, Any], depth: int = 2) -> list[tuple[str, ...]]:
    """Every field of ``payload``, and the fields of its objects (``depth`` levels)."""
    found: list[tuple[str, ...]] = []
    for key, value in payload.items():
        found.append((key,))
        if depth > 1 and isinstance(value, dict):
            found.extend((key, *rest) for rest in paths(value, depth - 1))
    return found


def apply(template: dict[str, Any], changes: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    payload = copy.deepcopy(template)
    for path, value in changes:
        parent: Any = payload
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        if value is MISSING:
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = value
    return payload


def mangled(template: dict[str, Any]) -> st.SearchStrategy[Any]:
    """``template`` with fields missing or of the wrong type — or no object at all."""
    change = st.tuples(st.sampled_from(paths(template)), st.one_of(st.just(MISSING), JSON))
    return st.one_of(
        st.lists(change, min_size=1, max_size=4).map(lambda c: apply(template, c)), JSON
    )


async def survives(d: Discord, event: str, payload: Any) -> None:
    """Send ``payload``, then a mark; the mark must arrive on the same, first connection."""
    assert d.adapter is not None and d.adapter.client is not None
    client = d.adapter.client
    arrived = client.wait_for("socket_event_type", check=lambda name: name == MARK)
    d.fake.gateway.send_raw(event, payload)
    d.fake.gateway.send_raw(MARK, {})
    await asyncio.wait_for(arrived, WITHIN)
    assert len(d.fake.gateway.connections) == 1, f"{event} {payload!r} ended the connection"
    assert len(d.fake.gateway.sessions) == 1 and not client.is_closed()


GENERATED = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@GENERATED
@given(data=st.data())
async def test_generated_message_creates_never_end_the_connection(
    running: Discord, data: st.DataObject
) -> None:
    quiet = next(
        iter(c for c in running.fake.world.channels.values() if c.parent_id is not None), None
    )
    if quiet is None:
        quiet = running.fake.world.add_thread(running.channel, "people only", running.bob)
    await survives(running, "MESSAGE_CREATE", data.draw(mangled(message_payload(running, quiet))))


@GENERATED
@given(data=st.data())
async def test_generated_thread_creates_never_end_the_connection(
    running: Discord, data: st.DataObject
) -> None:
    await survives(running, "THREAD_CREATE", data.draw(mangled(thread_payload(running))))


@GENERATED
@given(data=st.data())
async def test_generated_interactions_never_end_the_connection(
    running: Discord, data: st.DataObject
) -> None:
    world = running.fake.world
    target = next(iter(world.messages.values()), None) or world.create_message(
        running.channel.id, running.bob, "x"
    )
    await survives(
        running, "INTERACTION_CREATE", data.draw(mangled(click_payload(running, target)))
    )
