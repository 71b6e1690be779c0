"""The store contract: what every implementation of :class:`bot.storage.protocol.Store` does,
run on each one (see ``conftest.py``). Only the Protocols' methods are used here."""

from __future__ import annotations

import asyncio
import dataclasses

from bot.api.inbound import Attachment, ThreadKey
from bot.approvals.models import AllowRule, ApprovalRequest, ApprovalStatus, Approvers, AuditEntry
from bot.feedback.model import Feedback
from bot.llm.messages import AssistantMessage, Summary, ToolCall, ToolResult, Usage, UserMessage
from bot.mcp.sign_in_waits import SignInWait
from bot.scheduler.jobs import Job
from bot.sessions.model import AnswerRef, LiveMessage, PanelRef, RunState, Todo
from bot.storage.protocol import Store
from tests.bot.storage.conftest import Stores

KEY = ThreadKey("test:c1:t1")


async def test_a_new_thread_has_an_empty_unsaved_session(store: Store) -> None:
    session = await store.load_session(KEY, 100.0)
    assert session.messages == [] and session.state is RunState.IDLE
    assert session.created_at == 100.0
    assert not await store.has_session(KEY)
    await store.append_messages(session, [UserMessage(text="hi")])
    assert await store.has_session(KEY)


async def test_an_open_store_answers_and_a_closed_one_says_so(store: Store) -> None:
    assert await store.problem() is None
    await store.close()
    assert await store.problem() == "not open"


async def test_everything_survives_a_reopen(stores: Stores, store: Store) -> None:
    session = await store.load_session(KEY, 1.0)
    call = ToolCall(id="call_1", wire_id="w1", name="todo_write", arguments='{"todos": []}')
    await store.append_messages(
        session,
        [
            UserMessage(text="hello  there\nfriend", author_id="U1", author_name="Alice"),
            AssistantMessage(text="hi", tool_calls=(call,)),
            ToolResult(call_id="call_1", name="todo_write", content="ok"),
        ],
    )
    session.todos = (Todo(content="a", status="in_progress"), Todo(content="b"))
    session.usage = Usage(prompt_tokens=10, completion_tokens=5, cached_tokens=2)
    session.cost_usd = 0.25
    session.state = RunState.RUNNING
    session.panel = PanelRef(message_id="M9", content_hash="abc", pinned=True)
    session.inbox = [UserMessage(text="later", author_id="U2", author_name="Bob")]
    session.day, session.day_tokens, session.day_cost_usd = "2026-01-02", 15, 0.25
    session.toolkits = {
        "skills": {"loaded": [{"name": "deploy", "text": "Ünïcode ✓", "cut": False}]}
    }
    session.model = "gpt-4o"
    session.live_messages = [
        LiveMessage("M1", "Half of *an* answer ✓"),
        LiveMessage("M2", ""),
        LiveMessage("M3", None, stream=True),
    ]
    session.quiet = True
    session.updated_at = 5.0
    await store.save_state(session)

    store = await stores.reopen(store)
    again = await store.load_session(KEY, 99.0)
    assert again.messages == session.messages
    assert again.todos == session.todos
    assert again.usage == session.usage and again.cost_usd == 0.25
    assert again.state is RunState.RUNNING
    assert again.panel == PanelRef(message_id="M9", content_hash="abc", pinned=True)
    assert again.inbox == session.inbox
    assert (again.day, again.day_tokens, again.day_cost_usd) == ("2026-01-02", 15, 0.25)
    assert (again.created_at, again.updated_at) == (1.0, 5.0)
    assert again.toolkits == session.toolkits and again.model == "gpt-4o" and again.quiet
    assert again.live_messages == session.live_messages
    assert await store.keys_in_state(RunState.RUNNING) == [KEY]
    again.quiet, again.model = False, None  # back to the channel's: nothing of its own kept
    await store.save_state(again)
    store = await stores.reopen(store)
    last = await store.load_session(KEY, 99.0)
    assert (last.quiet, last.model, last.toolkits) == (False, None, session.toolkits)


async def test_toolkit_state_is_saved_with_the_messages_and_cleared_when_emptied(
    stores: Stores, store: Store
) -> None:
    session = await store.load_session(KEY, 1.0)
    assert session.toolkits == {}
    session.toolkits["skills"] = {"loaded": [{"name": "a"}]}
    await store.append_messages(session, [UserMessage(text="hi")])  # saved in the same write
    store = await stores.reopen(store)
    again = await store.load_session(KEY, 2.0)
    assert again.toolkits == {"skills": {"loaded": [{"name": "a"}]}}
    again.toolkits = {}
    await store.replace_messages(again, [])
    assert (await store.load_session(KEY, 3.0)).toolkits == {}


async def test_replace_messages_is_atomic_and_renumbers(store: Store) -> None:
    session = await store.load_session(KEY, 0.0)
    await store.append_messages(session, [UserMessage(text=f"m{i}") for i in range(5)])
    await store.replace_messages(
        session, [Summary(text="earlier", replaced=4), UserMessage(text="m4")]
    )
    await store.append_messages(session, [UserMessage(text="m5")])
    again = await store.load_session(KEY, 0.0)
    assert [getattr(m, "text", "") for m in again.messages] == ["earlier", "m4", "m5"]


async def test_concurrent_appends_to_different_threads_all_land(store: Store) -> None:
    async def talk(n: int) -> None:
        session = await store.load_session(ThreadKey(f"test:c:{n}"), 0.0)
        for i in range(10):
            await store.append_messages(session, [UserMessage(text=f"{n}-{i}")])

    await asyncio.gather(*(talk(n) for n in range(20)))
    for n in range(20):
        session = await store.load_session(ThreadKey(f"test:c:{n}"), 0.0)
        assert [getattr(m, "text", "") for m in session.messages] == [f"{n}-{i}" for i in range(10)]


async def test_threads_in_a_state_oldest_first(store: Store) -> None:
    for name, at, state in (
        ("a", 3.0, RunState.RUNNING),
        ("b", 1.0, RunState.RUNNING),
        ("c", 2.0, RunState.IDLE),
    ):
        session = await store.load_session(ThreadKey(name), at)
        session.state = state
        await store.append_messages(session, [UserMessage(text=name)])
    assert await store.keys_in_state(RunState.RUNNING) == ["b", "a"]
    assert await store.keys_in_state(RunState.RUNNING, limit=1) == ["b"]


async def test_the_latest_thread_under_a_prefix(store: Store) -> None:
    for name, at in (
        ("slack:T:C1:1", 3.0),
        ("slack:T:C1:2", 5.0),
        ("slack:T:C10:3", 9.0),
        ("slack:T:C2:4", 7.0),
    ):
        session = await store.load_session(ThreadKey(name), at)
        await store.append_messages(session, [UserMessage(text=name)])
    assert await store.latest_under("slack:T:C1:") == "slack:T:C1:2"
    assert await store.latest_under("slack:T:C2:") == "slack:T:C2:4"
    assert await store.latest_under("slack:T:C3:") is None
    assert await store.latest_under("slack:T:C_:") is None  # no pattern characters


async def test_deliveries_are_deduplicated_and_purged(stores: Stores, store: Store) -> None:
    assert await store.first_delivery("ev1", 10.0)
    assert not await store.first_delivery("ev1", 11.0)
    assert await store.first_delivery("ev2", 20.0)
    store = await stores.reopen(store)
    assert not await store.first_delivery("ev1", 12.0)  # persisted
    assert await store.purge_deliveries(before=15.0) == 1
    assert await store.first_delivery("ev1", 30.0)
    assert not await store.first_delivery("ev2", 30.0)


def _request(approval_id: str, call_id: str, expires_at: float = 100.0) -> ApprovalRequest:
    return ApprovalRequest(
        id=approval_id,
        key=KEY,
        call_id=call_id,
        tool="run_command",
        arguments='{"command": "ls"}',
        args_hash="h",
        requester_id="slack:U1",
        requester_name="Alice",
        approvers=Approvers(users=frozenset({"slack:U2"})),
        created_at=1.0,
        expires_at=expires_at,
        offer_always=True,
    )


async def test_an_approval_is_decided_exactly_once(stores: Stores, store: Store) -> None:
    await store.create_approval(_request("a1", "c1"))
    await store.create_approval(_request("a2", "c2"))
    assert await store.get_approval("nope") is None
    wins = await asyncio.gather(
        *(
            store.decide_approval("a1", ApprovalStatus.APPROVED, f"u{i}", f"U{i}", 5.0)
            for i in range(10)
        )
    )
    assert sum(wins) == 1
    assert not await store.decide_approval("a1", ApprovalStatus.DENIED, "x", "X", 6.0)
    await store.set_approval_card("a1", "card-1")

    store = await stores.reopen(store)
    decided = await store.get_approval("a1")
    assert decided is not None and decided.status is ApprovalStatus.APPROVED
    assert decided.decided_at == 5.0 and decided.card_id == "card-1"
    assert decided.approvers == Approvers(users=frozenset({"slack:U2"})) and decided.offer_always
    found = await store.approvals_for(KEY, ["c1", "c2", "c3"])
    assert sorted(found) == ["c1", "c2"] and found["c2"].pending
    assert await store.approvals_for(ThreadKey("other"), ["c1"]) == {}


async def test_an_approvals_direct_messages_are_claimed_once_per_stage(
    stores: Stores, store: Store
) -> None:
    approvers = Approvers(
        requester=False,
        users=frozenset({"slack:U2"}),
        escalate_roles=frozenset({"slack:group:S1"}),
        escalate_after=60.0,
        names=(("slack:U2", "Bob"),),
    )
    request = dataclasses.replace(_request("a1", "c1"), approvers=approvers)
    await store.create_approval(request)
    claims = await asyncio.gather(
        *(store.claim_notice(request, "approvers", 2.0) for _ in range(5))
    )
    assert sum(claims) == 1
    assert await store.claim_notice(request, "escalation", 3.0)
    store = await stores.reopen(store)
    assert not await store.claim_notice(request, "approvers", 4.0)
    assert not await store.claim_notice(request, "escalation", 4.0)
    kept = await store.get_approval("a1")
    assert kept is not None and kept.approvers == approvers and kept.escalates_at == 61.0
    trail = [e for e in await store.audit_trail() if e.event == "notified"]
    assert [(e.approval_id, e.detail) for e in trail] == [("a1", "approvers"), ("a1", "escalation")]


async def test_what_an_always_allow_covers_is_kept_with_the_request(
    stores: Stores, store: Store
) -> None:
    request = _request("a1", "c1")
    request.tool, request.allow_subject = "fetch_url", "https://docs.python.org"
    request.caution = "the server marks this tool destructive"
    await store.create_approval(request)
    await store.create_approval(_request("a2", "c2"))
    store = await stores.reopen(store)
    found = await store.get_approval("a1")
    assert found is not None and found.allow_subject == "https://docs.python.org"
    assert found.rule_tool == "fetch_url:https://docs.python.org"
    assert found.caution == "the server marks this tool destructive"
    assert found.exact_rule_tool == f"fetch_url#{found.args_hash}"
    other = await store.get_approval("a2")
    assert other is not None and other.allow_subject is None and other.rule_tool == "run_command"
    assert other.caution == ""


async def test_a_decision_after_expiry_loses_to_the_expiry(store: Store) -> None:
    await store.create_approval(_request("a1", "c1", expires_at=10.0))
    assert not await store.decide_approval("a1", ApprovalStatus.APPROVED, "u", "U", 10.0)
    assert await store.decide_approval("a1", ApprovalStatus.EXPIRED, None, None, 11.0)
    assert not await store.decide_approval("a1", ApprovalStatus.EXPIRED, None, None, 12.0)
    expired = await store.get_approval("a1")
    assert expired is not None and expired.status is ApprovalStatus.EXPIRED


async def test_allow_rules_cover_a_scope_a_tool_and_people_until_revoked(store: Store) -> None:
    rule = AllowRule("r1", "slack:T:C", "deploy", frozenset({"slack:U1"}), "slack:U2", "Bob", 1.0)
    assert await store.allow_rule_for("slack:T:C", "deploy", "slack:U1") is None
    await store.add_allow_rule(rule)
    await store.add_allow_rule(
        AllowRule("r2", "slack:T:D", "deploy", frozenset({"slack:U9"}), "x", "X", 2.0)
    )
    assert await store.allow_rule_for("slack:T:C", "deploy", "slack:U1") == rule
    assert await store.allow_rule_for("slack:T:C", "deploy", "slack:U2") is None  # not covered
    assert await store.allow_rule_for("slack:T:D", "deploy", "slack:U1") is None
    assert await store.allow_rule_for("slack:T:C", "write_file", "slack:U1") is None
    assert [r.id for r in await store.allow_rules()] == ["r1", "r2"]
    assert [r.id for r in await store.allow_rules("slack:T:D")] == ["r2"]
    assert await store.allow_rules("slack:T_") == []
    assert await store.revoke_allow_rule("r1", "slack:U3", "Cy", 5.0) == rule
    assert await store.revoke_allow_rule("r1", "slack:U3", "Cy", 6.0) is None
    assert await store.allow_rule_for("slack:T:C", "deploy", "slack:U1") is None
    trail = [(e.event, e.actor_name, e.at) for e in await store.audit_trail(within="slack:T:C")]
    assert trail == [("rule created", "Bob", 1.0), ("rule revoked", "Cy", 5.0)]


async def test_requests_and_decisions_are_audited_once(store: Store) -> None:
    await store.create_approval(_request("a1", "c1"))
    await store.decide_approval("a1", ApprovalStatus.DENIED, "slack:U2", "Bob", 5.0)
    await store.decide_approval(
        "a1", ApprovalStatus.APPROVED, "slack:U2", "Bob", 6.0
    )  # changes nothing
    await store.record_audit(AuditEntry(7.0, "other:k", "allowed by rule", "deploy", "h", "u", "U"))
    trail = await store.audit_trail()
    assert [(e.event, e.actor_name, e.approval_id, e.args_hash) for e in trail] == [
        ("requested", "Alice", "a1", "h"),
        ("denied", "Bob", "a1", "h"),
        ("allowed by rule", "U", "", "h"),
    ]
    assert [e.event for e in await store.audit_trail(since=5.5)] == ["allowed by rule"]
    assert [e.event for e in await store.audit_trail(within=KEY, limit=1)] == ["requested"]


async def test_rules_and_the_audit_of_a_channel_are_matched_part_by_part(store: Store) -> None:
    general, generalx = "slack:T1:C0GENERAL", "slack:T1:C0GENERALX"
    for n, scope in enumerate([generalx, general, generalx, "slack:T1:C0", general], start=1):
        await store.add_allow_rule(
            AllowRule(f"r{n}", scope, "deploy", frozenset({"slack:U1"}), "slack:U2", "B", n)
        )
    for n, key in enumerate([f"{generalx}:1.1", f"{general}:2.2", f"{generalx}:3.3"], start=10):
        await store.record_audit(AuditEntry(n, key, "allowed by rule", "deploy", "h", "u", "U"))

    def ids(rules: list[AllowRule]) -> list[str]:
        return [r.id for r in rules]

    assert ids(await store.allow_rules(general)) == ["r2", "r5"]
    assert ids(await store.allow_rules(f"{general}:")) == ["r2", "r5"]  # the same parts
    assert ids(await store.allow_rules(generalx)) == ["r1", "r3"]
    assert ids(await store.allow_rules("slack:T1")) == ["r1", "r2", "r3", "r4", "r5"]
    assert ids(await store.allow_rules("slack:T1:C0GEN")) == []  # no part is cut
    assert ids(await store.allow_rules("slack:T1:c0general")) == []  # parts are compared exactly

    def keys_of(trail: list[AuditEntry]) -> list[str]:
        return [e.key for e in trail]

    # the limit counts the channel's entries, not those of C0GENERALX before them
    assert keys_of(await store.audit_trail(within=general, since=10.0, limit=1)) == [
        f"{general}:2.2"
    ]
    assert keys_of(await store.audit_trail(within=f"{general}:2.2")) == [f"{general}:2.2"]
    assert keys_of(await store.audit_trail(within=f"{general}:2")) == []
    assert keys_of(await store.audit_trail(within=general)) == [general, general, f"{general}:2.2"]
    assert len(await store.audit_trail(within="slack:T1", since=10.0)) == 3
    assert len(await store.audit_trail(since=10.0)) == 3


async def test_jobs_come_due_in_order_and_are_replaced_by_id(stores: Stores, store: Store) -> None:
    assert await store.next_due() is None
    await store.put_job(Job("b", "kind", 20.0, {"n": 2}))
    await store.put_job(Job("a", "kind", 10.0, {"n": 1}, interval_s=60.0))
    await store.put_job(Job("c", "kind", 30.0))
    await store.put_job(Job("b", "kind", 25.0, {"n": 3}, attempts=2, last_error="boom"))
    store = await stores.reopen(store)
    assert await store.next_due() == 10.0
    due = await store.due_jobs(26.0)
    assert [(j.id, j.due_at, j.payload) for j in due] == [
        ("a", 10.0, {"n": 1}),
        ("b", 25.0, {"n": 3}),
    ]
    assert due[0].interval_s == 60.0 and (due[1].attempts, due[1].last_error) == (2, "boom")
    assert [j.id for j in await store.due_jobs(100.0, limit=1)] == ["a"]
    await store.delete_job("a")
    assert await store.next_due() == 25.0


async def test_an_arrival_keeps_the_files_it_names_until_its_session_holds_it(
    stores: Stores, store: Store
) -> None:
    files = (
        Attachment("report.pdf", "https://files.example/1", 2_000_000, "application/pdf"),
        Attachment("notes.txt", "https://files.example/2"),
    )
    message = UserMessage(text="see these", author_id="u1", author_name="Ann", event_id="ev1")
    plain = UserMessage(text="no files", author_id="u1", author_name="Ann", event_id="ev2")
    assert await store.accept(KEY, message, 1.0, files)
    assert await store.accept(KEY, plain, 1.0)
    assert not await store.accept(KEY, message, 2.0, files[:1])  # a redelivery changes nothing
    store = await stores.reopen(store)  # a restart during the download
    assert await store.arrival_files("ev1") == files
    assert await store.arrival_files("ev2") == ()
    session = await store.load_session(KEY, 3.0)
    await store.append_messages(session, [message, plain])
    assert await store.arrival_files("ev1") == ()  # in its session: nothing left to fetch


async def test_an_accepted_message_waits_as_an_arrival_until_its_session_holds_it(
    stores: Stores, store: Store
) -> None:
    first = UserMessage(text="one", author_id="u1", author_name="Ann", event_id="ev1")
    second = UserMessage(
        text="two", author_id="u2", author_name="Bo", event_id="ev2", addressed=False
    )
    assert await store.accept(KEY, first, 1.0)
    assert not await store.accept(KEY, first, 2.0)  # a redelivery keeps nothing more
    assert not await store.first_delivery("ev1", 2.0)
    assert await store.accept(ThreadKey("other"), second, 3.0)
    assert await store.has_session(KEY)  # joined: a message is on its way to it
    store = await stores.reopen(store)
    assert await store.arrivals() == [(KEY, first), (ThreadKey("other"), second)]

    session = await store.load_session(KEY, 4.0)
    await store.append_messages(session, [first])  # in the transcript: arrived
    other = await store.load_session(ThreadKey("other"), 4.0)
    other.inbox.append(second)
    await store.save_state(other)  # in the inbox of a running run: arrived too
    assert await store.arrivals() == []


async def test_an_edit_that_changes_nothing_ends_its_arrival_its_id_kept(
    stores: Stores, store: Store
) -> None:
    edit = UserMessage(text="new", event_id="ed1", message_id="1.2", edit=True)
    assert await store.accept(KEY, edit, 1.0)
    await store.end_arrival("ed1")
    assert await store.arrivals() == []
    assert not await store.accept(KEY, edit, 2.0), "a redelivery is still known"


async def test_the_last_answer_of_a_thread_is_kept_with_its_session(
    stores: Stores, store: Store
) -> None:
    session = await store.load_session(KEY, 1.0)
    session.answered("1.2", ("m1", "m2"))
    session.answered("1.2", ("m2", "m3"))  # another run of the same message adds its own
    session.quiet = True
    await store.save_state(session)
    store = await stores.reopen(store)
    loaded = await store.load_session(KEY, 2.0)
    assert loaded.answer == AnswerRef("1.2", ("m1", "m2", "m3"))
    assert loaded.quiet and loaded.toolkits == {}
    loaded.answered("1.3", ("m4",))
    assert loaded.answer == AnswerRef("1.3", ("m4",))


async def test_feedback_counts_once_per_person_and_run_the_last_click_winning(
    store: Store,
) -> None:
    up = Feedback("r1", KEY, "slack:U1", "Alice", "up", 10.0)
    assert await store.record_feedback(up) == "new"
    assert await store.record_feedback(up) == "same"
    down = Feedback("r1", KEY, "slack:U1", "Alice", "down", 11.0)
    assert await store.record_feedback(down) == "changed"
    assert await store.record_feedback(Feedback("r1", KEY, "slack:U2", "Bob", "up", 12.0)) == "new"
    assert await store.note_feedback("r1", "slack:U1", "it made up a flag")
    assert not await store.note_feedback("r1", "slack:U2", "a note on a 👍 is not kept")
    assert not await store.note_feedback("r9", "slack:U1", "no such run")
    given = await store.feedback_since(0.0, 10)
    assert [(f.user_id, f.value, f.at, f.note) for f in given] == [
        ("slack:U1", "down", 11.0, "it made up a flag"),
        ("slack:U2", "up", 12.0, ""),
    ]
    assert [f.user_id for f in await store.feedback_since(11.5, 10)] == ["slack:U2"]
    assert len(await store.feedback_since(0.0, 1)) == 1


async def test_a_sign_in_wait_is_used_once_and_not_after_it_expires(store: Store) -> None:
    def wait(wait_id: str, call_id: str, made: float) -> SignInWait:
        return SignInWait(
            wait_id, "docs", "slack:U1", "Alice", KEY, call_id, "sealed", made, made + 100.0
        )

    await store.add_sign_in_wait(wait("w1", "c1", 10.0))
    await store.add_sign_in_wait(wait("w2", "c2", 20.0))
    await store.add_sign_in_wait(wait("w1", "c9", 30.0))  # the same link again: kept as it was
    found = await store.get_sign_in_wait("w1")
    assert found is not None and found.call_id == "c1" and found.open_at(50.0)
    assert not await store.use_sign_in_wait("w2", 120.0), "expired"
    assert await store.use_sign_in_wait("w1", 50.0)
    assert not await store.use_sign_in_wait("w1", 51.0), "used once"
    waits = await store.sign_in_waits_for(KEY, ["c1", "c2", "c3"])
    assert [(w.wait_id, w.used_at) for w in waits] == [("w1", 50.0), ("w2", None)]
    assert await store.sign_in_waits_for(KEY, []) == []
    assert await store.get_sign_in_wait("nope") is None
    await store.add_sign_in_wait(wait("w3", "c3", 200_000.0))  # a day later: expired ones go
    assert await store.get_sign_in_wait("w1") is None
    assert [w.wait_id for w in await store.sign_in_waits_for(KEY, ["c1", "c3"])] == ["w3"]


async def test_a_sign_in_callback_is_handed_to_its_owner_and_taken_once(store: Store) -> None:
    def wait(wait_id: str, owner: str) -> SignInWait:
        return SignInWait(
            wait_id, "docs", "slack:U1", "Alice", KEY, "c1", "sealed", 10.0, 110.0, owner=owner
        )

    await store.add_sign_in_wait(wait("w1", "worker-a"))
    await store.add_sign_in_wait(wait("w2", "worker-a"))
    assert (await store.get_sign_in_wait("w1")) == wait("w1", "worker-a")
    assert await store.take_sign_in_wait("w1", "worker-a", 20.0) is None, "nothing handed yet"
    assert not await store.hand_sign_in_wait("w1", "late", 120.0), "expired"
    assert await store.hand_sign_in_wait("w1", "sealed-code", 20.0)
    assert not await store.hand_sign_in_wait("w1", "another", 21.0), "handed once"
    assert await store.take_sign_in_wait("w1", "worker-b", 22.0) is None, "not its owner"
    assert await store.take_sign_in_wait("w1", "worker-a", 22.0) == "sealed-code"
    assert await store.take_sign_in_wait("w1", "worker-a", 23.0) is None, "taken once"
    assert not await store.use_sign_in_wait("w1", 23.0)
    found = await store.get_sign_in_wait("w1")
    assert found is not None and (found.used_at, found.taken_at) == (22.0, 22.0)
    # an owner that lets go: the worker that got the callback finishes it itself
    await store.release_sign_in_wait("w2", "worker-b")
    assert (await store.get_sign_in_wait("w2")) == wait("w2", "worker-a")
    await store.release_sign_in_wait("w2", "worker-a")
    assert (await store.get_sign_in_wait("w2")) == wait("w2", "")
    # ended after its expiry (a paused run's call ends), once
    assert not await store.use_sign_in_wait("w2", 200.0)
    assert await store.end_sign_in_wait("w2", 200.0)
    assert not await store.end_sign_in_wait("w2", 201.0)


async def test_a_reset_closes_a_threads_feedback_to_notes(store: Store) -> None:
    other = ThreadKey("test:c1:t2")
    await store.record_feedback(Feedback("r1", KEY, "slack:U1", "Alice", "down", 10.0))
    await store.record_feedback(Feedback("r2", other, "slack:U1", "Alice", "down", 10.0))
    await store.close_feedback(KEY)
    assert not await store.note_feedback("r1", "slack:U1", "too late")
    assert await store.note_feedback("r2", "slack:U1", "another thread")
    assert [f.run_id for f in await store.feedback_since(0.0, 10)] == ["r1", "r2"]
