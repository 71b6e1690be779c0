"""How far a reader walks through the tree to follow one message or one click: the files of
``bot/`` and ``adapters/`` that a test's path through the code enters, in the order each
function is first entered.

A *hop* is a step of that order into another file; a *return* is a hop back into a file already
left. Each function counts once (its first entry), so the figures describe the code a reader has
to open, not how often loops run. The walks are two scenario tests that use the real slack-bolt
against the fake Slack:

- the mention: a person mentions the bot and its answer streams (``test_conversations``);
- the click: people click Approve on a card (first one who may not decide, then one who may)
  and the run resumes.

Each walk starts where the Slack listener first receives the event and ends where the test
stops the runtime, so neither the runtime's start-up nor its shut-down is counted.

    python -m bench.walk [--show]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WALKS = {
    "mention": (
        "tests/adapters/slack/test_conversations.py::"
        "test_a_mention_is_answered_in_a_thread_by_one_streamed_message",
        "on_message",
    ),
    "click": (
        "tests/adapters/slack/test_buttons_and_panel.py::"
        "test_a_member_of_a_user_group_named_as_approvers_decides",
        "on_action",
    ),
}
"""Each walk: the test, and the Slack listener whose first entry starts it."""
END = ("adapters/runtime.py", "Runtime.stop")
"""Where each walk ends: the test stops the runtime."""
OURS = (str(ROOT / "bot") + "/", str(ROOT / "adapters") + "/")


@dataclass
class Walk:
    """The order in which the test's path first enters each of our functions."""

    start: str
    ended: bool = False
    seen: set[Any] = field(default_factory=set)
    files: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)

    def profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        if self.ended or (
            self.files and code.co_qualname == END[1] and code.co_filename.endswith(END[0])
        ):
            self.ended = True
            return
        if not self.files and not (
            code.co_name == self.start and code.co_filename.endswith("slack/listeners.py")
        ):
            return
        if code in self.seen or not code.co_filename.startswith(OURS):
            return
        self.seen.add(code)
        self.files.append(str(Path(code.co_filename).relative_to(ROOT)))
        self.functions.append(code.co_qualname)

    def figures(self) -> tuple[int, int, int]:
        """(files, hops, returns)."""
        hops = returns = 0
        left: set[str] = set()
        for before, after in zip(self.files, self.files[1:], strict=False):
            if after != before:
                hops += 1
                left.add(before)
                returns += after in left
        return len(set(self.files)), hops, returns


class Tracer:
    """A pytest plugin: profiles the test's call phase only (not its fixtures' set-up)."""

    def __init__(self, start: str) -> None:
        self.walk = Walk(start)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        import threading

        sys.setprofile(self.walk.profile)
        threading.setprofile(self.walk.profile)
        try:
            yield
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]


def measure(test: str, start: str) -> Walk:
    tracer = Tracer(start)
    code = pytest.main(["-q", "-p", "no:cacheprovider", str(ROOT / test)], plugins=[tracer])
    if code != 0:
        raise SystemExit(f"{test} failed: the walk is not measured")
    return tracer.walk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print each walk's files in order")
    args = parser.parse_args()
    rows = []
    for name, (test, start) in WALKS.items():
        walk = measure(test, start)
        rows.append((name, *walk.figures()))
        if args.show:
            print(f"\n{name}:")
            for i, (file, function) in enumerate(zip(walk.files, walk.functions, strict=True)):
                if i == 0 or walk.files[i - 1] != file:
                    print(f"  {file}: ", end="")
                print(function, end="\n" if walk.files[i + 1 : i + 2] != [file] else ", ")
    print(f"\n{'walk':<8} {'files':>6} {'hops':>6} {'returns':>8}")
    for name, files, hops, returns in rows:
        print(f"{name:<8} {files:>6} {hops:>6} {returns:>8}")


if __name__ == "__main__":
    main()
