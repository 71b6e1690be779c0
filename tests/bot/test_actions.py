"""Every button's action id goes through one codec, and comes back as what it was."""

from __future__ import annotations

import pytest

from bot.api import actions
from bot.api.actions import Decide, Explain, Rate, ResetThread, SignIn, StopRun
from bot.approvals.models import Choice


@pytest.mark.parametrize(
    "action",
    [
        Decide(Choice.APPROVE, "abc_-1"),
        Decide(Choice.DENY, "x"),
        Decide(Choice.ALWAYS, "y"),
        StopRun("r1"),
        ResetThread("slack:T0123456789:C0123456789:1700000000.000100"),
        ResetThread("discord:123456789012345678:123456789012345678"),
        Rate("r1", good=True),
        Rate("r1", good=False),
        Explain("r1"),
        SignIn("f" * 64),  # a wait's id: a SHA-256 in hex
    ],
)
def test_an_action_survives_the_round_trip(action: actions.Action) -> None:
    assert actions.parse(actions.encode(action)) == action


@pytest.mark.parametrize(
    "text", ["", "stop", "stop:", "reset:", "approve", "approve:", "launch:1", ":x", "a" * 300]
)
def test_anything_else_is_not_an_action(text: str) -> None:
    assert actions.parse(text) is None


def test_an_id_too_long_for_a_platform_is_refused() -> None:
    with pytest.raises(ValueError, match="longer than"):
        actions.encode(StopRun("r" * 200))


def test_a_thumbs_down_asks_why_in_a_form_of_its_own_and_nothing_else_does() -> None:
    down, up = actions.encode(Rate("r1", good=False)), actions.encode(Rate("r1", good=True))
    assert actions.explain_after(down) == actions.encode(Explain("r1"))
    assert actions.explain_after(up) is None
    assert actions.explain_after(actions.encode(StopRun("r1"))) is None
    assert actions.is_feedback(up) and actions.is_feedback(down)
    assert not actions.is_feedback(actions.encode(StopRun("r1")))
