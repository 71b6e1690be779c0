"""Splitting rendered text at a platform's limit without breaking code blocks."""

from __future__ import annotations

import random
import re

import pytest

from bot.present.split import open_block, split_message

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def unsplit(text: str, chunks: list[str]) -> list[tuple[bool, bool]]:
    """Check that ``chunks`` carry ``text``: each, without the fence lines the splitter added,
    is the next stretch of the original, and only whitespace lies between stretches.

    Returns, per chunk, whether a fence was reopened at its start and closed at its end.
    """
    pos = 0
    shape: list[tuple[bool, bool]] = []
    for chunk in chunks:
        for reopened, closed in ((False, False), (False, True), (True, False), (True, True)):
            body = chunk
            if reopened:
                first, _, body = body.partition("\n")
                if not FENCE.match(first):
                    continue
            if closed:
                head, _, last = body.rpartition("\n")
                if not FENCE.match(last) or FENCE.match(last).group(2).strip():  # type: ignore[union-attr]
                    continue
                body = head
            at = text.find(body, pos) if body else pos
            if at >= 0 and not text[pos:at].strip():
                pos = at + len(body)
                shape.append((reopened, closed))
                break
        else:
            raise AssertionError(f"chunk not found in the original after {pos}: {chunk!r}")
    assert not text[pos:].strip(), "text after the last chunk was lost"
    return shape


def fences(chunk: str) -> list[str]:
    return [line for line in chunk.split("\n") if FENCE.match(line)]


def words(rng: random.Random, n: int) -> str:
    vocab = [
        "alpha",
        "beta",
        "gamma",
        "δέλτα",
        "emoji🙂",
        "x",
        "longer-token",
        "`tick`",
        "**bold**",
    ]
    return " ".join(rng.choice(vocab) for _ in range(n))


def document(rng: random.Random) -> str:
    """Paragraphs, lists, code blocks (with and without info strings), long unbroken runs."""
    blocks: list[str] = []
    for _ in range(rng.randint(1, 12)):
        kind = rng.random()
        if kind < 0.35:
            blocks.append(words(rng, rng.randint(1, 80)))
        elif kind < 0.5:
            blocks.append(
                "\n".join(f"- {words(rng, rng.randint(1, 12))}" for _ in range(rng.randint(1, 8)))
            )
        elif kind < 0.85:
            marker = rng.choice(["```", "```", "~~~", "````"])
            info = rng.choice(["", "python", "js", "text title=x"])
            body = "\n".join(
                " " * rng.randint(0, 8) + words(rng, rng.randint(0, 10))
                for _ in range(rng.randint(1, 40))
            )
            blocks.append(f"{marker}{info}\n{body}\n{marker}")
        else:
            blocks.append("z" * rng.randint(1, 600))
    text = "\n\n".join(blocks)
    if rng.random() < 0.15:
        text += "\n\n```python\n" + "\n".join(words(rng, 6) for _ in range(rng.randint(1, 30)))
    return text


@pytest.mark.parametrize("seed", range(300))
def test_any_document_splits_within_the_limit_and_keeps_everything(seed: int) -> None:
    rng = random.Random(seed)
    text = document(rng)
    limit = rng.choice([32, 50, 80, 200, 500, 2000])
    chunks = split_message(text, limit)

    assert chunks, "a non-blank text gives at least one chunk"
    assert all(0 < len(c) <= limit for c in chunks)
    assert all(c.strip() for c in chunks)
    shape = unsplit(text, chunks)
    for i, (_, closed) in enumerate(shape):
        if i + 1 < len(shape):
            assert closed == shape[i + 1][0], (
                "a block closed at a cut is reopened in the next chunk"
            )
        if closed:
            opener = fences(chunks[i])[-2] if len(fences(chunks[i])) >= 2 else None
            reopened_with = chunks[i + 1].split("\n", 1)[0]
            assert opener is not None
            opener = opener.lstrip(" ")
            marker = FENCE.match(opener).group(1)  # type: ignore[union-attr]
            # the same info string is reused, unless it would crowd a tiny message
            assert reopened_with == opener or (limit < 4 * len(opener) and reopened_with == marker)
    for chunk in chunks[:-1]:
        assert open_block(chunk) is None, f"a chunk ends inside a code block: {chunk!r}"
    assert (open_block(chunks[-1]) is None) == (open_block(text) is None)


@pytest.mark.parametrize("seed", range(40))
def test_a_growing_text_keeps_its_earlier_chunks(seed: int) -> None:
    rng = random.Random(1000 + seed)
    text = document(rng) + "\n\n" + document(rng)
    limit = rng.choice([80, 200, 500])
    final = split_message(text, limit)
    for cut in range(1, len(text), max(1, len(text) // 25)):
        partial = split_message(text[:cut], limit)
        settled = partial[:-2]  # the last chunks may still move as text arrives
        assert final[: len(settled)] == settled


def test_short_text_is_one_chunk_and_blank_text_none() -> None:
    assert split_message("hello", 100) == ["hello"]
    assert split_message("\n\n  hello  \n", 100) == ["  hello"]
    assert split_message("", 100) == []
    assert split_message(" \n\t\n", 100) == []


def test_prefers_paragraph_then_line_then_word_breaks() -> None:
    para = "a" * 30 + "\n\n" + "b" * 30
    assert split_message(para, 40) == ["a" * 30, "b" * 30]
    lines = "a" * 20 + "\n" + "b" * 15 + "\n" + "c" * 20
    assert split_message(lines, 40) == ["a" * 20 + "\n" + "b" * 15, "c" * 20]
    spaced = "word " * 20
    chunks = split_message(spaced, 40)
    assert all(not c.startswith(" ") and "wor " not in c for c in chunks)
    assert " ".join(chunks).split() == spaced.split()


def test_unbroken_text_is_cut_hard() -> None:
    assert split_message("x" * 100, 40) == ["x" * 40, "x" * 40, "x" * 20]


def test_code_block_is_closed_and_reopened_with_its_info_string() -> None:
    code = "\n".join(f"print({i})" for i in range(40))
    text = f"Here it is:\n\n```python\n{code}\n```\n\nDone."
    chunks = split_message(text, 120)
    assert len(chunks) > 2
    for chunk in chunks:
        assert len(chunk) <= 120
        assert len(fences(chunk)) % 2 == 0
    for chunk in chunks[1:-1]:
        assert chunk.startswith("```python\n") and chunk.endswith("\n```")
    assert chunks[-1].endswith("```\n\nDone.") or chunks[-1] == "Done."
    printed = [line for c in chunks for line in c.split("\n") if line.startswith("print(")]
    assert printed == code.split("\n")


def test_tilde_and_long_fences_close_with_their_own_marker() -> None:
    text = "````md\n" + "\n".join("```nested```" for _ in range(20)) + "\n````"
    chunks = split_message(text, 80)
    assert all(c.startswith("````md\n") for c in chunks)
    assert all(c.endswith("\n````") for c in chunks)
    tilde = "~~~\n" + "\n".join(f"line {i}" for i in range(30)) + "\n~~~"
    assert all(c.endswith("~~~") for c in split_message(tilde, 60))


def test_an_unclosed_block_at_the_end_stays_open() -> None:
    text = "intro\n\n```js\n" + "\n".join(f"let a{i} = {i};" for i in range(30))
    chunks = split_message(text, 100)
    assert open_block(chunks[-1]) == "```"
    assert all(open_block(c) is None for c in chunks[:-1])


def test_a_fence_line_is_never_cut_in_half() -> None:
    text = "y" * 30 + "\n```a-very-long-info-string-here\ncode\n```"
    for limit in range(32, 60):
        for chunk in split_message(text, limit):
            for line in chunk.split("\n"):
                assert not (line.startswith("``") and not line.startswith("```")), chunk


def test_limit_too_small_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        split_message("text", 10)
