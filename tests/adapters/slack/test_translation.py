"""The adapter's pure translations: Markdown out, payloads in, names, Block Kit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters.slack.blocks import clicked_action, fallback, message_payload
from adapters.slack.parse import parse_click, parse_message, plain_text, split_key, thread_key
from adapters.slack.people import DisplayNames, UserGroups, configured_groups
from adapters.slack.render import ZWSP, render
from bot.api.surface import Button
from bot.config import Settings
from bot.errors import SurfaceError
from bot.infra.clock import ManualClock

BOT = "UBOT"


def event(**fields: Any) -> dict[str, Any]:
    base = {
        "type": "message",
        "channel": "C1",
        "ts": "10.1",
        "user": "U1",
        "text": "hi",
        "channel_type": "channel",
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    "raw", ["<!channel>", "<!here>", "<!everyone>", "<!subteam^S1|@ops>", "<!date^1|x>"]
)
def test_special_mentions_are_broken(raw: str) -> None:
    out = render(f"hi {raw} there")
    assert raw not in out and out.replace(ZWSP, "") == f"hi {raw} there"


@pytest.mark.parametrize("word", ["@channel", "@here", "@everyone", "@HERE", "(@channel)"])
def test_at_mentions_are_broken(word: str) -> None:
    out = render(f"{word} look")
    assert word not in out and out.replace(ZWSP, "") == f"{word} look"


def test_ordinary_text_and_addresses_pass_unchanged() -> None:
    text = "Mail ada@here.com, see **bold** & <stuff> and `code` — @channelling is fine"
    assert render(text) == text


def test_a_table_becomes_aligned_code_but_not_inside_a_code_block() -> None:
    text = "| a | b |\n|:--|--:|\n| `x` | **10** |\n\n```\n| a | b |\n|---|---|\n```"
    assert render(text) == "```\na |  b\n--+---\nx | 10\n```\n\n```\n| a | b |\n|---|---|\n```"


def test_a_line_with_pipes_that_is_not_a_table_is_left_alone() -> None:
    assert render("a | b\nc | d") == "a | b\nc | d"


def test_the_payload_carries_markdown_buttons_and_an_escaped_fallback() -> None:
    payload = message_payload(
        "**Deploy** <now> & then?",
        [Button("approve:1", "Approve", "primary"), Button("deny:1", "x" * 90)],
    )
    markdown, actions = payload["blocks"]
    assert markdown == {"type": "markdown", "text": "**Deploy** <now> & then?"}
    assert payload["text"] == "**Deploy** &lt;now&gt; &amp; then?"
    first, second = actions["elements"]
    assert (first["action_id"], first["value"], first["style"]) == (
        "approve:1",
        "approve:1",
        "primary",
    )
    assert len(second["text"]["text"]) == 75 and "style" not in second
    assert clicked_action(second) == "deny:1"


def test_long_or_repeated_action_ids_still_come_back_whole() -> None:
    long_id = "approve:" + "z" * 400
    elements = message_payload(
        "x", [Button(long_id, "A"), Button("same", "B"), Button("same", "C")]
    )["blocks"][1]["elements"]
    ids = [e["action_id"] for e in elements]
    assert len(set(ids)) == 3 and all(len(i) <= 255 for i in ids)
    assert [clicked_action(e) for e in elements] == [long_id, "same", "same"]
    with pytest.raises(SurfaceError):
        message_payload("x", [Button("y" * 2001, "too long")])


def test_fallback_is_one_short_line() -> None:
    assert fallback("a\n\nb   c") == "a b c"
    assert len(fallback("word " * 500)) == 300
    assert fallback("") == " "


def test_a_mention_in_a_channel_starts_a_thread_under_it() -> None:
    message = parse_message(event(text=f"<@{BOT}>: summarise this"), BOT)
    assert message is not None
    assert (message.root_ts, message.text, message.needs_session) == (
        "10.1",
        "summarise this",
        False,
    )
    assert message.thread_key("T1") == "slack:T1:C1:10.1"
    assert message.event_id("T1") == "slack:T1:C1:10.1"
    assert split_key(message.thread_key("T1")) == ("T1", "C1", "10.1")


def test_the_message_and_app_mention_of_one_message_share_their_id() -> None:
    text = f"hey <@{BOT}|threadline> look"
    a = parse_message(event(text=text, thread_ts="9.0"), BOT)
    b = parse_message(
        {
            "type": "app_mention",
            "channel": "C1",
            "ts": "10.1",
            "user": "U1",
            "text": text,
            "thread_ts": "9.0",
        },
        BOT,
    )
    assert a is not None and b is not None
    assert a.event_id("T") == b.event_id("T") and a.thread_key("T") == thread_key("T", "C1", "9.0")
    assert a.text == "hey look"


def test_thread_replies_without_a_mention_need_a_joined_thread() -> None:
    reply = parse_message(event(thread_ts="9.0"), BOT)
    assert reply is not None and reply.needs_session and reply.root_ts == "9.0"
    assert parse_message(event(), BOT) is None  # top-level, no mention


def test_direct_messages_need_no_mention() -> None:
    dm = parse_message(event(channel="D1", channel_type="im"), BOT)
    assert dm is not None and not dm.needs_session and dm.root_ts == "10.1"
    reply = parse_message(event(channel="D1", channel_type="im", thread_ts="9.0"), BOT)
    assert reply is not None and not reply.needs_session and reply.root_ts == "9.0"


@pytest.mark.parametrize(
    "fields",
    [
        {"user": BOT},
        {"bot_id": "B2"},
        {"subtype": "bot_message", "user": None},
        {"subtype": "message_changed"},
        {"subtype": "message_deleted"},
        {"subtype": "channel_join"},
        {"hidden": True},
        {"text": f"<@{BOT}>"},
        {"user": 7},
        {"ts": None},
    ],
)
def test_what_is_ignored(fields: dict[str, Any]) -> None:
    assert parse_message(event(text=f"<@{BOT}> hi") | fields, BOT) is None


def test_files_come_along_and_a_file_alone_is_a_message() -> None:
    files = [
        {"id": "F1", "name": "log.txt", "url_private": "https://files/x", "size": 12},
        {"bad": 1},
    ]
    message = parse_message(event(text=f"<@{BOT}>", subtype="file_share", files=files), BOT)
    assert message is not None and message.text == ""
    assert [(f.name, f.url, f.size) for f in message.files] == [("log.txt", "https://files/x", 12)]


def test_a_click_payload() -> None:
    body = {
        "type": "block_actions",
        "user": {"id": "U2"},
        "channel": {"id": "C1"},
        "container": {"message_ts": "11.0", "thread_ts": "10.1"},
        "message": {"ts": "11.0", "thread_ts": "10.1"},
        "actions": [{"action_id": "threadline-0-abc", "value": "approve:1"}],
    }
    click = parse_click(body)
    assert click is not None and (click.user, click.channel, click.root_ts, click.action_id) == (
        "U2",
        "C1",
        "10.1",
        "approve:1",
    )
    assert click.message_ts == "11.0"  # the clicked message itself
    assert parse_click({**body, "actions": []}) is None
    assert parse_click({**body, "type": "view_submission"}) is None
    assert parse_click({**body, "user": "U2"}) is None


def test_slack_markup_becomes_plain_text() -> None:
    text = (
        "<@U2> and <@U3|grace> in <#C1|general>, <!here>, <!subteam^S1|@ops>: "
        "see <https://x.io/a?b=1&amp;c=2|the doc> or <https://y.io> &lt;3 &amp; mail <mailto:a@b.c|a@b.c>"
    )
    assert plain_text(text, {"U2": "Ada"}) == (
        "@Ada and @grace in #general, @here, @ops: see the doc (https://x.io/a?b=1&c=2) or "
        "https://y.io <3 & mail a@b.c"
    )


async def test_names_are_cached_bounded_and_looked_up_once_at_a_time() -> None:
    calls: list[str] = []
    gate = asyncio.Event()

    async def lookup(user_id: str) -> dict[str, Any]:
        calls.append(user_id)
        await gate.wait()
        if user_id == "UBAD":
            raise SurfaceError("users.info failed")
        return {"name": "ada", "profile": {"display_name": "", "real_name": f"Real {user_id}\n"}}

    clock = ManualClock()
    names = DisplayNames(lookup, clock, capacity=2, ttl=100)
    pending = [asyncio.ensure_future(names.name("U1")) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*pending) == ["Real U1"] * 3
    assert calls == ["U1"]
    assert await names.name("UBAD") == "UBAD"
    await names.name("U2")
    assert len(names) == 2  # U1 was the least recently used
    await names.name("U1")
    assert calls == ["U1", "UBAD", "U2", "U1"]
    await clock.advance(101)
    await names.name("U1")
    assert calls[-1] == "U1" and len(calls) == 5


def test_the_user_groups_named_as_approvers_are_found_everywhere_in_the_configuration() -> None:
    settings = Settings(
        _env_file=None,
        tools={"deploy": {"approvers": {"roles": ["slack:group:SOPS", "discord:role:7"]}}},
        channels={
            "slack:T1:C1": {
                "approvers": {"roles": ["slack:group:SLEADS"]},
                "tools": {"run_command": {"approvers": {"roles": ["slack:group:SDEV"]}}},
            }
        },
    )
    assert configured_groups(settings) == {"SOPS", "SLEADS", "SDEV"}
    assert configured_groups(Settings(_env_file=None)) == frozenset()


async def test_group_members_are_kept_a_minute_read_once_at_a_time_and_fail_closed() -> None:
    calls: list[str] = []
    gate = asyncio.Event()
    members = {"SOPS": {"UGRACE"}, "SDEV": {"UGRACE", "UADA"}}

    async def lookup(group: str) -> frozenset[str]:
        calls.append(group)
        await gate.wait()
        if group not in members:
            raise SurfaceError("usergroups.users.list failed: missing_scope")
        return frozenset(members[group])

    clock = ManualClock()
    groups = UserGroups(lookup, frozenset({"SOPS", "SDEV", "SGONE"}), clock)
    pending = [asyncio.ensure_future(groups.roles_of(u)) for u in ("UGRACE", "UADA", "UGRACE")]
    await asyncio.sleep(0)
    gate.set()
    grace, ada, _ = await asyncio.gather(*pending)
    assert grace == {"slack:group:SOPS", "slack:group:SDEV"} and ada == {"slack:group:SDEV"}
    assert sorted(calls) == ["SDEV", "SGONE", "SOPS"]  # one call per group for all three clicks
    members["SOPS"].discard("UGRACE")
    await clock.advance(30)
    assert "slack:group:SOPS" in await groups.roles_of("UGRACE")  # still within the minute
    await clock.advance(31)
    assert await groups.roles_of("UGRACE") == {"slack:group:SDEV"}  # removed: noticed
    assert calls.count("SGONE") == 3  # a failure is asked again sooner than a success
    assert not await UserGroups(lookup, frozenset(), clock).roles_of("UGRACE")
