"""The playground's platform-side state: what it holds, what it announces, what it saves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.playground.state import (
    ButtonData,
    PlaygroundState,
    UnknownMessage,
    UnknownThread,
)
from bot.infra.clock import ManualClock


def user_message(state: PlaygroundState, thread_id: str, text: str, event_id: str = "e1") -> str:
    return state.post(
        thread_id, author_id="playground:u1", author_name="Ada", text=text, event_id=event_id
    ).id


async def test_changes_are_held_and_announced_in_order(tmp_path: Path) -> None:
    state = PlaygroundState(tmp_path / "playground.json")
    events: list[dict[str, Any]] = []
    state.subscribe(events.append)
    thread = state.create_thread("  Plan   the\nlaunch  ")
    assert thread.title == "Plan the launch"
    first = user_message(state, thread.id, "Plan the launch")
    reply = state.post(
        thread.id, author_id="bot", author_name="Threadline", text="On it", bot=True
    ).id
    state.edit(
        thread.id, reply, "On it — here is the plan", [ButtonData(action_id="a:1", label="OK")]
    )
    state.pin(thread.id, reply)
    state.pin(thread.id, reply)  # pinning twice changes nothing
    state.set_status(thread.id, "thinking…")
    state.unpin(thread.id, reply)
    state.delete(thread.id, first)

    shown = state.thread(thread.id)
    assert [m.text for m in shown.messages] == ["On it — here is the plan"]
    assert shown.messages[0].edits == 1 and shown.messages[0].buttons[0].label == "OK"
    assert shown.pins == []
    assert state.status(thread.id) == "thinking…"
    assert [e["type"] for e in events] == [
        "thread",
        "message",
        "thread",
        "message",
        "thread",
        "message",
        "pins",
        "status",
        "pins",
        "deleted",
    ]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert state.by_event("e1") == (thread.id, first)
    await state.close()


async def test_deleting_a_pinned_message_unpins_it(tmp_path: Path) -> None:
    state = PlaygroundState(tmp_path / "playground.json")
    thread = state.create_thread("t")
    panel = state.post(
        thread.id, author_id="bot", author_name="Threadline", text="**Plan**", bot=True
    ).id
    state.pin(thread.id, panel)
    state.delete(thread.id, panel)
    assert state.thread(thread.id).pins == []
    with pytest.raises(UnknownMessage):
        state.edit(thread.id, panel, "again", [])
    with pytest.raises(UnknownThread):
        state.post("nope", author_id="bot", author_name="Threadline", text="x")
    await state.close()


async def test_a_new_state_on_the_same_file_sees_everything_but_the_status(tmp_path: Path) -> None:
    path = tmp_path / "data" / "playground.json"
    state = PlaygroundState(path)
    thread = state.create_thread("Persist me")
    user_message(state, thread.id, "Persist me", event_id="evt-1")
    reply = state.post(thread.id, author_id="bot", author_name="Threadline", text="a", bot=True).id
    for n in range(20):
        state.edit(
            thread.id, reply, "a" * (n + 2), [ButtonData(action_id="x", label="X", style="danger")]
        )
    state.pin(thread.id, reply)
    state.set_status(thread.id, "thinking…")
    await state.close()

    again = PlaygroundState(path)
    await again.load()
    loaded = again.thread(thread.id)
    assert [m.text for m in loaded.messages] == ["Persist me", "a" * 21]
    assert loaded.messages[1].edits == 20 and loaded.messages[1].buttons[0].style == "danger"
    assert loaded.pins == [reply]
    assert again.status(thread.id) is None
    assert again.by_event("evt-1") == (thread.id, loaded.messages[0].id)
    assert [p.name for p in path.parent.iterdir()] == ["playground.json"]  # no temporary files left
    await again.close()


async def test_streaming_edits_are_saved_once_per_delay_and_the_rest_on_close(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    path = tmp_path / "playground.json"
    state = PlaygroundState(path, clock=clock, save_delay=0.5)
    thread = state.create_thread("stream")
    reply = state.post(thread.id, author_id="bot", author_name="Threadline", text="", bot=True).id
    for n in range(100):
        state.edit(thread.id, reply, f"chunk {n}", [])
    assert state.saves == 0 and not path.exists()

    await clock.advance(0.5)
    await state.flush()  # waits for the write the timer started, if still under way
    assert state.saves == 1
    assert "chunk 99" in path.read_text()

    state.edit(thread.id, reply, "the final text", [])
    await state.close()
    assert state.saves == 2
    saved = json.loads(path.read_text())
    assert saved["threads"][0]["messages"][0]["text"] == "the final text"


async def test_an_unreadable_file_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "playground.json"
    path.write_text("{not json")
    state = PlaygroundState(path)
    await state.load()
    assert state.threads() == []
    assert (tmp_path / "playground.json.unreadable").read_text() == "{not json"
    await state.close()
