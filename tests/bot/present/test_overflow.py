"""Where a huge reply stops being shown, and what its last line says."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.errors import SurfaceError
from bot.present.overflow import LINE_SLACK, Overflow


@dataclass
class Files:
    sent: list[tuple[str, bytes]] = field(default_factory=list)
    refuse: bool = False

    async def fetch(self, file: object, limit: int) -> bytes:
        raise AssertionError("not used")

    async def send(self, name: str, data: bytes) -> None:
        if self.refuse:
            raise SurfaceError("413 too large")
        self.sent.append((name, data))


def feed(overflow: Overflow, text: str, size: int = 7) -> str:
    return "".join(overflow.take(text[i : i + size]) for i in range(0, len(text), size))


async def test_the_reply_ends_at_the_first_line_break_past_the_limit() -> None:
    files = Files()
    overflow = Overflow(2_000, files)
    text = "".join(f"{n:04d} words words words\n" for n in range(500))
    shown = feed(overflow, text)
    assert shown == text[: text.index("\n", 2_000) + 1]
    assert overflow.ending().endswith(
        f"({len(text) - len(shown):,} more characters) is in answer.md, below._"
    )
    assert await overflow.post_rest() is None
    assert files.sent == [("answer.md", text[len(shown) :].encode())]
    assert overflow.ending() == "" and await overflow.post_rest() is None  # once


async def test_a_line_without_end_is_cut_after_the_slack() -> None:
    overflow = Overflow(2_000, Files())
    shown = feed(overflow, "x" * 10_000, size=333)
    assert len(shown) == 2_000 + LINE_SLACK


async def test_a_cut_inside_a_code_block_closes_it_and_notices_stay_shown() -> None:
    overflow = Overflow(2_000, Files())
    feed(overflow, "Here:\n```python\n" + "print(1)\n" * 1_000)
    assert overflow.note("Stopped by Ada.")
    assert overflow.ending().startswith("\n```\n\n_… the rest")
    assert overflow.ending().endswith("below._\n\n_Stopped by Ada._")


async def test_without_files_everything_is_shown_and_a_refusal_is_said() -> None:
    text = "y\n" * 5_000
    assert feed(Overflow(2_000, None), text) == text
    overflow = Overflow(2_000, Files(refuse=True))
    assert not overflow.note("not kept")
    feed(overflow, text)
    said = await overflow.post_rest()
    assert said == "⚠️ The rest of the answer could not be posted as answer.md: 413 too large"
