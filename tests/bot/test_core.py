"""The core end to end with a scripted model, a recording surface and the real SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.errors import ModelServerError, ModelUnavailable
from bot.infra.clock import ManualClock
from bot.llm.messages import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from bot.llm.model import ModelPiece, ModelRequest
from bot.sessions.model import RunState, Session
from bot.storage.sqlite.store import SqliteStore
from bot.thread.recovery import INTERRUPTED
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.surface import RecordingSurface, drive, run_until

KEY = ThreadKey("test:thread")
ALICE = Author(id="test:U1", display_name="Alice")
BOB = Author(id="test:U2", display_name="Bob")
TODOS = {"todos": [{"content": "look", "status": "in_progress"}, {"content": "answer"}]}
DONE = {
    "todos": [
        {"content": "look", "status": "completed"},
        {"content": "answer", "status": "completed"},
    ]
}


class World:
    """One process's core over a data dir; ``restart`` builds a new one on the same files."""

    def __init__(self, tmp_path: Path, steps: list[Step], **settings: object) -> None:
        self.tmp_path = tmp_path
        self.clock = ManualClock(start=1_000_000.0)
        self.model = ScriptedModel(steps)
        self.settings = Settings(data_dir=tmp_path, **settings)  # type: ignore[arg-type]
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        self.core = self._core()
        self._events = 0

    def _core(self) -> Core:
        store = SqliteStore(self.settings.database_path)
        return Core(self.settings, store, self.model, ToolRegistry(builtin_tools()), self.clock)

    async def restart(self) -> None:
        await self.core.aclose()
        self.core = self._core()
        await self.core.start()

    def inbound(self, words: str, author: Author = ALICE, event_id: str | None = None) -> Inbound:
        self._events += 1
        return Inbound(KEY, author, words, event_id or f"ev{self._events}")

    async def say(self, words: str, author: Author = ALICE, event_id: str | None = None) -> None:
        await drive(
            self.clock, self.core.handle(self.inbound(words, author, event_id), self.surface)
        )

    async def session(self):  # type: ignore[no-untyped-def]
        return await self.core.store.load_session(KEY, self.clock.now())


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path, [])
    await w.core.start()
    yield w
    await w.core.aclose()


async def test_a_message_gets_one_streamed_reply_and_is_stored(world: World) -> None:
    world.model.steps = [text("Hello ", "Alice", "!")]
    await world.say("hi")
    assert world.surface.texts() == ["Hello Alice!"]
    session = await world.session()
    assert [type(m) for m in session.messages] == [UserMessage, AssistantMessage]
    assert session.messages[0] == UserMessage(
        text="hi", author_id=ALICE.id, author_name="Alice", event_id="ev1"
    )
    assert session.state is RunState.IDLE
    assert len(world.surface.live()) == 1


async def test_a_redelivered_event_is_answered_once(world: World) -> None:
    world.model.steps = [text("once")]
    await world.say("hi", event_id="same")
    await world.say("hi", event_id="same")
    await world.restart()
    await world.say("hi", event_id="same")
    assert len(world.model.requests) == 1
    assert world.surface.texts() == ["once"]


async def test_messages_arriving_during_a_run_wait_their_turn_in_order(world: World) -> None:
    gate = asyncio.Event()
    seen: list[str] = []

    def respond(request):  # type: ignore[no-untyped-def]
        last = request.messages[-1]
        seen.append(last.text)
        return text(f"re: {last.text}")

    world.model.respond = respond
    first = world.inbound("first")
    second = world.inbound("second", BOB)
    third = world.inbound("third")

    async def all_three() -> None:
        tasks = [
            asyncio.create_task(world.core.handle(m, world.surface)) for m in (first, second, third)
        ]
        gate.set()
        await asyncio.gather(*tasks)

    await drive(world.clock, all_three())
    assert seen == ["first", "second", "third"]
    assert world.surface.texts() == ["re: first", "re: second", "re: third"]
    session = await world.session()
    texts = [m.text for m in session.messages if isinstance(m, UserMessage | AssistantMessage)]
    assert texts == ["first", "re: first", "second", "re: second", "third", "re: third"]


async def test_a_huge_message_is_capped_and_the_thread_is_told(tmp_path: Path) -> None:
    world = World(tmp_path, [text("ok")], max_input_chars=1000)
    await world.core.start()
    try:
        await world.say("x" * 5000)
        assert "5,000 characters" in world.surface.visible_text()
        assert "first 1,000" in world.surface.visible_text()
        session = await world.session()
        assert len(session.messages[0].text) == 1000  # type: ignore[union-attr]
        assert world.model.requests[0].messages[-1].text == "x" * 1000  # type: ignore[union-attr]
    finally:
        await world.core.aclose()


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (ModelUnavailable("connection refused"), "couldn't reach the model server"),
        (ModelServerError("500", status=500), "kept failing"),
    ],
)
async def test_a_failing_model_gives_a_clear_message_and_loses_nothing(
    world: World, error: Exception, words: str
) -> None:
    world.model.steps = [error, text("back again")]
    await world.say("first try")
    assert words in world.surface.visible_text()
    session = await world.session()
    assert session.messages == [
        UserMessage(text="first try", author_id=ALICE.id, author_name="Alice", event_id="ev1")
    ]
    assert session.state is RunState.IDLE
    await world.say("second try")
    assert world.surface.texts()[-1] == "back again"
    assert len((await world.session()).messages) == 3


async def test_the_todo_panel_is_posted_once_and_survives_a_restart(world: World) -> None:
    world.model.steps = [step(call("todo_write", TODOS)), text("working on it")]
    await world.say("plan it")
    panels = [m for m in world.surface.live() if "look" in m.text]
    assert len(panels) == 1 and world.surface.pinned_ids == [panels[0].id]

    await world.restart()
    world.model.steps = [step(call("todo_write", DONE)), text("all done")]
    await world.say("finish it")
    panels = [m for m in world.surface.live() if "look" in m.text]
    assert len(panels) == 1, "a restart must not post a second panel"
    assert world.surface.pinned_ids == []  # all completed: unpinned
    assert world.surface.count("post") == 3  # reply, panel, reply


async def test_invalid_arguments_and_unknown_tools_come_back_to_the_model(world: World) -> None:
    world.model.steps = [
        step(
            call("todo_write", '{"todos": [', index=0, provider_id="a"),
            call("launch_rockets", {}, index=1, provider_id="b"),
        ),
        text("sorry, fixed"),
    ]
    await world.say("go")
    session = await world.session()
    results = [m for m in session.messages if isinstance(m, ToolResult)]
    assert [r.is_error for r in results] == [True, True]
    assert "invalid" in results[0].content.lower() or "json" in results[0].content.lower()
    assert "no tool named 'launch_rockets'" in results[1].content
    assert world.surface.texts() == ["sorry, fixed"]


async def test_a_run_cut_off_by_a_crash_is_repaired_on_the_next_message(world: World) -> None:
    session = await world.session()
    dangling = ToolCall(id="call_x", wire_id="w", name="todo_write", arguments="{}")
    await world.core.store.append_messages(
        session, [UserMessage(text="before the crash"), AssistantMessage(tool_calls=(dangling,))]
    )
    session.state = RunState.RUNNING
    await world.core.store.save_state(session)
    await world.restart()

    world.model.steps = [text("resumed")]
    await world.say("are you there?")
    session = await world.session()
    kinds = [type(m).__name__ for m in session.messages]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResult",
        "UserMessage",
        "AssistantMessage",
    ]
    result = session.messages[2]
    assert (
        isinstance(result, ToolResult)
        and result.call_id == "call_x"
        and result.content == INTERRUPTED
    )
    assert session.state is RunState.IDLE
    # the model saw a consistent transcript: every call answered before the new message
    sent = [m for m in world.model.requests[0].messages if not isinstance(m, SystemMessage)]
    assert isinstance(sent[2], ToolResult) and sent[3].text == "are you there?"  # type: ignore[union-attr]


async def test_describe_and_reset(world: World) -> None:
    assert "No conversation" in await world.core.describe(KEY)
    world.model.steps = [step(call("todo_write", TODOS)), text("on it")]
    await world.say("plan")
    described = await world.core.describe(KEY)
    assert "Messages: 4" in described and "Todos: 0 of 2 done" in described
    assert world.surface.pinned_ids
    await world.core.reset(KEY, world.surface)
    session = await world.session()
    assert session.messages == [] and session.todos == () and session.panel is None
    assert world.surface.pinned_ids == []  # no stale pin left behind
    assert await world.core.has_session(KEY)
    world.model.steps = [text("fresh")]
    await world.say("again")
    sent = world.model.requests[-1].messages
    assert [m.text for m in sent if not isinstance(m, SystemMessage)] == ["again"]  # type: ignore[union-attr]


async def test_a_run_cut_off_by_a_crash_is_recovered_at_start_up(world: World) -> None:
    session = await world.session()
    call_ = ToolCall(id="call_y", wire_id="w", name="todo_write", arguments="{}")
    await world.core.store.append_messages(
        session, [UserMessage(text="do it"), AssistantMessage(tool_calls=(call_,))]
    )
    session.state = RunState.RUNNING
    session.inbox = [UserMessage(text="and also this", author_id=BOB.id, author_name="Bob")]
    await world.core.store.save_state(session)
    await world.restart()
    world.core.register_surfaces("test:", lambda key: world.surface)
    world.model.steps = [text("Back: the last step was interrupted.")]

    assert await world.core.recover() == 1
    await drive(world.clock, world.core.wait_idle())
    session = await world.session()
    assert session.state is RunState.IDLE and session.inbox == []
    kinds = [type(m).__name__ for m in session.messages]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResult",
        "UserMessage",
        "AssistantMessage",
    ]
    assert world.surface.texts() == ["Back: the last step was interrupted."]
    assert await world.core.recover() == 0  # nothing left to recover


async def test_a_run_cut_off_by_a_restart_is_picked_up_where_it_left_off(world: World) -> None:
    session = await world.session()
    call_ = ToolCall(id="call_z", wire_id="w", name="todo_write", arguments="{}")
    asked = UserMessage(text="long job", author_id=BOB.id, author_name="Bob")
    await world.core.store.append_messages(session, [asked, AssistantMessage(tool_calls=(call_,))])
    session.state = RunState.RUNNING
    await world.core.store.save_state(session)
    await world.restart()
    world.core.register_surfaces("test:", lambda key: world.surface)
    world.model.steps = [text("Picked up: the list step was interrupted, so here is the rest.")]

    assert await world.core.recover() == 1
    await drive(world.clock, world.core.wait_idle())
    shown = world.surface.visible_text()
    assert "picking up where I left off" in shown and "here is the rest" in shown
    sent = world.model.requests[0].messages
    assert isinstance(sent[-1], ToolResult) and sent[-1].content.startswith("interrupted")
    session = await world.session()
    assert session.state is RunState.IDLE
    assert [type(m).__name__ for m in session.messages][-1] == "AssistantMessage"


async def test_a_run_cut_off_again_after_being_picked_up_is_left_with_a_word(world: World) -> None:
    session = await world.session()
    await world.core.store.append_messages(session, [UserMessage(text="the job that crashes")])
    session.state = RunState.RESUMED  # it was already picked up once after a restart
    await world.core.store.save_state(session)
    await world.restart()
    world.core.register_surfaces("test:", lambda key: world.surface)
    await world.core.recover()
    await drive(world.clock, world.core.wait_idle())
    assert "I was restarted while working on this" in world.surface.visible_text()
    assert "Send a message to go on" in world.surface.visible_text()
    assert (await world.session()).state is RunState.IDLE
    assert world.model.requests == []


async def test_a_message_accepted_before_a_crash_is_answered_after_the_restart(
    world: World,
) -> None:
    accepted = UserMessage(
        text="are you there?", author_id=ALICE.id, author_name="Alice", event_id="evX"
    )
    assert await world.core.deliveries.accept(KEY, accepted)  # acknowledged; then the process died
    world.model.steps = [text("I am.")]
    await world.restart()
    world.core.register_surfaces(KEY, lambda key: world.surface)
    assert await drive(world.clock, world.core.recover()) == 1
    await drive(world.clock, world.core.wait_idle())
    session = await world.session()
    assert session.messages[0] == accepted and world.surface.texts()[-1] == "I am."
    assert await world.core.store.arrivals() == []
    await world.restart()
    world.core.register_surfaces(KEY, lambda key: world.surface)
    assert await drive(world.clock, world.core.recover()) == 0  # answered once


async def test_a_message_this_process_accepted_is_not_taken_for_a_restarts_leftover(
    world: World,
) -> None:
    """An adapter may accept a message (a catch-up after connecting) while the restart is being
    mended: the adapter answers it; recovery must not answer it a second time."""
    world.core.register_surfaces(KEY, lambda key: world.surface)
    mine = UserMessage(text="hello again", author_id=ALICE.id, author_name="Alice", event_id="evY")
    assert await world.core.deliveries.accept(KEY, mine)
    assert await drive(world.clock, world.core.recover()) == 0
    assert world.surface.texts() == [] and world.model.requests == []


class Killed(BaseException):
    """The process died at this write (nothing after it runs)."""


class DyingStore(SqliteStore):
    """The real store; ``die_after_append`` kills the process right after the next transcript
    write is stored (before anything else happens). ``dies_after(session)`` picks a write of a
    session's state to die right after; that write first waits for ``release``, when set
    (``reached`` says it is waiting). Once dead, no write of a session is stored any more."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.die_after_append = False
        self.dies_after: Callable[[Session], bool] | None = None
        self.release: asyncio.Event | None = None
        self.reached = asyncio.Event()
        self.dead = False

    async def append_messages(self, session, messages):  # type: ignore[no-untyped-def]
        if self.dead:
            raise Killed
        await super().append_messages(session, messages)
        if self.die_after_append:
            raise Killed

    async def save_state(self, session):  # type: ignore[no-untyped-def]
        if self.dead:
            raise Killed
        dies = self.dies_after is not None and self.dies_after(session)
        if dies:
            self.dies_after = None
            self.reached.set()
            if self.release is not None:
                await self.release.wait()
        await super().save_state(session)
        if dies:
            self.dead = True
            raise Killed


async def test_a_crash_right_after_a_message_is_stored_leaves_a_run_that_is_picked_up(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, [text("Here I am.")])
    store = DyingStore(world.settings.database_path)
    world.core = Core(
        world.settings, store, world.model, ToolRegistry(builtin_tools()), world.clock
    )
    await world.core.start()
    store.die_after_append = True
    with pytest.raises(Killed):
        await world.say("are you there?")
    assert world.surface.texts() == []
    await world.restart()
    try:
        world.core.register_surfaces(KEY, lambda key: world.surface)
        assert await drive(world.clock, world.core.recover()) == 1  # a cut-off run, not a quiet one
        await drive(world.clock, world.core.wait_idle())
        assert world.surface.texts()[-1].endswith("picking up where I left off._\n\nHere I am.")
        assert [type(m) for m in (await world.session()).messages] == [
            UserMessage,
            AssistantMessage,
        ]
    finally:
        await world.core.aclose()


class HeldModel(ScriptedModel):
    """Its first call streams once ``go_on`` is set (``asked`` says it was called)."""

    def __init__(self, steps: list[Step]) -> None:
        super().__init__(steps)
        self.asked, self.go_on = asyncio.Event(), asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        if not self.requests:
            self.asked.set()
            await self.go_on.wait()
        async for piece in super().stream(request):
            yield piece


def answered(session: Session) -> bool:
    """The write that ends the run answering the first message: its answer is stored."""
    return bool(session.messages) and isinstance(session.messages[-1], AssistantMessage)


async def dying_world(tmp_path: Path) -> tuple[World, DyingStore, HeldModel]:
    world = World(tmp_path, [])
    world.model = model = HeldModel([text("First answer."), text("Second answer.")])
    store = DyingStore(world.settings.database_path)
    world.core = Core(world.settings, store, model, ToolRegistry(builtin_tools()), world.clock)
    await world.core.start()
    return world, store, model


async def answered_after_the_restart(world: World) -> None:
    await world.restart()
    try:
        world.core.register_surfaces(KEY, lambda key: world.surface)
        assert await drive(world.clock, world.core.recover()) == 1
        await drive(world.clock, world.core.wait_idle())
        asked = [m.text for m in (await world.session()).messages if isinstance(m, UserMessage)]
        assert asked == ["first", "second"], "the message accepted before the crash was lost"
        assert world.surface.texts()[-1] == "Second answer."
    finally:
        await world.core.aclose()


async def test_a_crash_as_a_run_ends_keeps_the_message_steered_into_its_last_model_call(
    tmp_path: Path,
) -> None:
    """A message that comes while the run's model is answering is handed to that run (steered),
    too late for this call: the run goes on for it after the answer. A crash right after the
    write that ends the answer's run leaves it in a run cut off, which the restart picks up."""
    world, store, model = await dying_world(tmp_path)
    store.dies_after = answered
    first = asyncio.create_task(world.core.handle(world.inbound("first"), world.surface))
    await asyncio.wait_for(model.asked.wait(), 5)
    assert await world.core.admit(world.inbound("second", BOB), world.surface) is None  # steered
    model.go_on.set()
    await run_until(world.clock, first.done)
    with pytest.raises(Killed):
        await first
    await answered_after_the_restart(world)


async def test_a_crash_as_a_run_ends_keeps_a_message_that_came_while_the_end_was_stored(
    tmp_path: Path,
) -> None:
    """A message that comes while the end of a run is being stored (the run has read its last
    message) waits for its own turn; a crash right after that write leaves it accepted, and the
    restart answers it."""
    world, store, model = await dying_world(tmp_path)
    model.go_on.set()
    store.dies_after, store.release = answered, asyncio.Event()
    first = asyncio.create_task(world.core.handle(world.inbound("first"), world.surface))
    await run_until(world.clock, store.reached.is_set)
    second = await world.core.admit(world.inbound("second", BOB), world.surface)
    store.release.set()
    await run_until(world.clock, first.done)
    with pytest.raises(Killed):
        await first
    if second is not None:  # its own turn, after the first run's: it died with the process
        with pytest.raises(Killed):
            await second
    await answered_after_the_restart(world)
