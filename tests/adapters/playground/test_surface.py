"""PlaygroundSurface: the Surface protocol over the playground's state, with its limits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.playground.state import BOT_NAME, PlaygroundState
from adapters.playground.surface import LIMITS, PlaygroundSurface
from bot.api.surface import Button
from bot.errors import EditRefused, MessageTooLong, SurfaceError


@pytest.fixture
async def state(tmp_path: Path) -> AsyncIterator[PlaygroundState]:
    state = PlaygroundState(tmp_path / "playground.json")
    yield state
    await state.close()


@pytest.fixture
async def surface(state: PlaygroundState) -> PlaygroundSurface:
    return PlaygroundSurface(state, state.create_thread("hello").id)


def test_it_declares_the_playground_limits(surface: PlaygroundSurface) -> None:
    assert surface.thread_key.startswith("playground:")
    assert surface.limits == LIMITS
    assert (LIMITS.max_chars, LIMITS.min_edit_interval, LIMITS.edits_per_minute) == (
        4000,
        0.25,
        None,
    )
    assert (LIMITS.budget_key, LIMITS.can_pin) == ("playground", True)


@pytest.mark.parametrize(
    ("markdown", "shown"),
    [
        ("ping @everyone now", "ping @\u200beveryone now"),
        ("@here: **look**", "@\u200bhere: **look**"),
        ("@HERE", "@\u200bHERE"),
        ("mail ops@here.example and @hereby", "mail ops@here.example and @hereby"),
        ("```py\nx = 1\n```", "```py\nx = 1\n```"),
    ],
)
def test_render_keeps_markdown_and_neutralises_mass_mentions(
    surface: PlaygroundSurface, markdown: str, shown: str
) -> None:
    assert surface.render(markdown) == shown


async def test_post_edit_pin_unpin_delete_show_in_the_thread(
    state: PlaygroundState, surface: PlaygroundSurface
) -> None:
    thread_id = surface.thread_key.removeprefix("playground:")
    reply = await surface.post("Working…")
    panel = await surface.post("**Plan** · 0/2 done", [Button("stop:1", "Stop", "danger")])
    await surface.edit(reply, "Done.")
    await surface.pin(panel)
    await surface.set_status("thinking…")

    thread = state.thread(thread_id)
    assert [(m.author_name, m.bot, m.text) for m in thread.messages] == [
        (BOT_NAME, True, "Done."),
        (BOT_NAME, True, "**Plan** · 0/2 done"),
    ]
    assert thread.messages[0].edits == 1
    assert [(b.action_id, b.label, b.style) for b in thread.messages[1].buttons] == [
        ("stop:1", "Stop", "danger")
    ]
    assert thread.pins == [panel]
    assert state.status(thread_id) == "thinking…"

    await surface.unpin(panel)
    await surface.unpin(panel)
    await surface.delete(reply)
    await surface.set_status(None)
    assert thread.pins == []
    assert [m.id for m in thread.messages] == [panel]
    assert state.status(thread_id) is None


async def test_it_refuses_what_the_platform_refuses(surface: PlaygroundSurface) -> None:
    exactly = await surface.post("x" * 4000)
    with pytest.raises(MessageTooLong):
        await surface.post("x" * 4001)
    with pytest.raises(MessageTooLong):
        await surface.edit(exactly, "y" * 4001)
    await surface.delete(exactly)
    with pytest.raises(EditRefused):
        await surface.edit(exactly, "gone")
    with pytest.raises(SurfaceError):
        await surface.pin(exactly)
    with pytest.raises(SurfaceError):
        await surface.delete(exactly)


async def test_a_thread_that_does_not_exist_fails_as_a_platform_error(
    state: PlaygroundState,
) -> None:
    surface = PlaygroundSurface(state, "missing")
    with pytest.raises(SurfaceError):
        await surface.post("hello")
    with pytest.raises(SurfaceError):
        await surface.set_status("thinking…")


async def test_an_edit_that_changes_buttons_is_on_disk_at_once(tmp_path: Path) -> None:
    """A run's last edit takes its Stop button away; a process killed a moment later must not
    bring the button back (streamed text alone may be saved a moment later)."""
    path = tmp_path / "playground.json"
    state = PlaygroundState(path, save_delay=3600)
    try:
        surface = PlaygroundSurface(state, state.create_thread("hello").id)
        reply = await surface.post("Work", [Button("stop:1", "Stop", "danger")])
        await surface.edit(reply, "Working on it", [Button("stop:1", "Stop", "danger")])
        assert "Working on it" not in path.read_text()  # text alone waits for the timer
        await surface.edit(reply, "Done.")
        on_disk = PlaygroundState(path)
        await on_disk.load()
        shown = on_disk.message(surface.thread_key.removeprefix("playground:"), reply)
        assert (shown.text, shown.buttons) == ("Done.", [])
        card = await surface.post("Approve?", [Button("a:1", "Approve")])
        await surface.drop_buttons(card)
        await on_disk.load()
        assert on_disk.message(surface.thread_key.removeprefix("playground:"), card).buttons == []
    finally:
        await state.close()
