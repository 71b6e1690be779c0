"""The store contract for what a person is shown outside a thread (Slack's App Home): the
threads they spoke in, and the approval requests still waiting. Run on every implementation."""

from __future__ import annotations

from bot.api.inbound import ThreadKey
from bot.approvals.models import ApprovalRequest, ApprovalStatus, Approvers
from bot.llm.messages import AssistantMessage, UserMessage
from bot.storage.protocol import Store
from bot.storage.rows import title_of
from tests.bot.storage.conftest import Stores


def said(person: str, text: str) -> UserMessage:
    return UserMessage(text=text, author_id=person, author_name=person)


async def write(store: Store, key: str, at: float, *messages: UserMessage) -> None:
    session = await store.load_session(ThreadKey(key), at)
    session.updated_at = at
    await store.append_messages(session, [*messages, AssistantMessage(text="ok")])


async def test_the_threads_a_person_spoke_in_latest_first_with_their_first_words(
    stores: Stores, store: Store
) -> None:
    await write(store, "slack:T1:C1:1", 1.0, said("slack:UA", "Why did the deploy\nfail?"))
    await write(store, "slack:T1:C1:1", 5.0, said("slack:UA", "and now?"))  # the title stays
    await write(store, "slack:T1:C2:2", 3.0, said("slack:UB", "hi"), said("slack:UA", "me too"))
    await write(store, "slack:T10:C1:3", 9.0, said("slack:UA", "another workspace"))
    await write(store, "slack:T1:D1:4", 2.0, UserMessage(text="nobody's"))
    store = await stores.reopen(store)

    mine = await store.threads_of("slack:UA", "slack:T1")
    assert [(t.key, t.title, t.at) for t in mine] == [
        ("slack:T1:C1:1", "Why did the deploy fail?", 5.0),
        ("slack:T1:C2:2", "me too", 3.0),
    ]
    assert [t.key for t in await store.threads_of("slack:UA")] == [
        "slack:T10:C1:3",
        "slack:T1:C1:1",
        "slack:T1:C2:2",
    ]
    assert [t.key for t in await store.threads_of("slack:UA", "slack:T1", limit=1)] == [
        "slack:T1:C1:1"
    ]
    assert [t.title for t in await store.threads_of("slack:UB", "slack:T1")] == ["hi"]
    assert await store.threads_of("slack:UC", "slack:T1") == []


def test_a_title_is_the_first_line_cut_at_a_word() -> None:
    assert title_of("\n  deploy   the  thing \nsecond line") == "deploy the thing second line"
    long = "word " * 40
    cut = title_of(long)
    assert len(cut) <= 80 and cut.endswith("word…")
    assert title_of("") == ""


def request(approval_id: str, key: str, expires_at: float) -> ApprovalRequest:
    return ApprovalRequest(
        id=approval_id,
        key=key,
        call_id=f"call-{approval_id}",
        tool="run_command",
        arguments='{"command": "ls"}',
        args_hash="h",
        requester_id="slack:UA",
        requester_name="Ada",
        approvers=Approvers(users=frozenset({"slack:UB"})),
        created_at=1.0,
        expires_at=expires_at,
    )


async def test_the_pending_requests_under_a_key_expiring_first_first(store: Store) -> None:
    await store.create_approval(request("a1", "slack:T1:C1:1", 50.0))
    await store.create_approval(request("a2", "slack:T1:C2:2", 30.0))
    await store.create_approval(request("a3", "slack:T10:C1:3", 40.0))  # another workspace
    await store.create_approval(request("a4", "slack:T1:C1:4", 20.0))  # expired by then
    await store.create_approval(request("a5", "slack:T1:C1:5", 60.0))
    assert await store.decide_approval("a5", ApprovalStatus.DENIED, "slack:UB", "Bea", 10.0)

    waiting = await store.pending_approvals("slack:T1", 25.0)
    assert [(a.id, a.key, a.pending) for a in waiting] == [
        ("a2", "slack:T1:C2:2", True),
        ("a1", "slack:T1:C1:1", True),
    ]
    assert [a.id for a in await store.pending_approvals("", 25.0)] == ["a2", "a3", "a1"]
    assert [a.id for a in await store.pending_approvals("slack:T1", 25.0, limit=1)] == ["a2"]
