"""A whole conversation in the playground, in a real headless Chromium, on the real runtime.

The page is driven like a person would: type, send, watch the reply stream in and the todo
panel pinned at the top until its items are done, write again in the same thread, reload.
Every wait is on a condition (Playwright's expect / wait_for_function, or the adapter going
idle); a recorder in the page keeps every state the pinned bar and the replies went through,
so a change that comes and goes quickly is still seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.playground import PlaygroundAdapter
from adapters.playground.server import STATIC
from tests.adapters.playground.conftest import demo_runtime
from tests.fakes.documents import CSV

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = Path("/tmp/playground.png")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 20_000
HOSTILE = (
    b"<html><script>window.opener && (window.opener.__ran = 1); parent.__ran = 1</script></html>"
)

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"
    ),
    pytest.mark.timeout(60),
]

RECORDER = """
window.__seen = { pins: [], replies: {} };
document.addEventListener("DOMContentLoaded", () => {
  const pins = document.getElementById("pins");
  const messages = document.getElementById("messages");
  const note = () => {
    const text = pins.hidden ? "" : pins.innerText.trim();
    const all = window.__seen.pins;
    if (all[all.length - 1] !== text) all.push(text);
    for (const node of messages.querySelectorAll(".msg.bot")) {
      const texts = (window.__seen.replies[node.dataset.id] ||= []);
      const body = node.querySelector(".msg-body").innerText;
      if (texts[texts.length - 1] !== body) texts.push(body);
    }
  };
  const observer = new MutationObserver(note);
  for (const target of [pins, messages]) {
    observer.observe(target, { childList: true, subtree: true, characterData: true, attributes: true });
  }
});
"""


@pytest.fixture
async def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[str, PlaygroundAdapter]]:
    async with demo_runtime(tmp_path, monkeypatch) as runtime:
        adapter = next(a for a in runtime.adapters if isinstance(a, PlaygroundAdapter))
        yield runtime.url, adapter


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            await browser.close()


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    context = await browser.new_context(viewport={"width": 1200, "height": 820})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.add_init_script(RECORDER)
    yield page
    assert errors == [], f"the page raised: {errors}"


async def send(page: Any, text: str) -> None:
    from playwright.async_api import expect

    await page.locator("#input").fill(text)
    await page.keyboard.press("Enter")
    await expect(page.locator(".msg.user .msg-body", has_text=text)).to_be_visible(timeout=WAIT_MS)


async def answered(page: Any, adapter: PlaygroundAdapter, thread_id: str) -> str:
    """Wait for the run to end and the page to show the reply exactly as the thread holds it."""
    await asyncio.wait_for(adapter.wait_idle(), WAIT_MS / 1000)
    reply = [m for m in adapter.state.thread(thread_id).messages if m.bot and not m.buttons][-1]
    await page.wait_for_function(
        """([id, edits]) => {
             const node = document.querySelector(`.msg[data-id="${id}"]`);
             return node !== null && Number(node.dataset.edits) === edits;
           }""",
        arg=[reply.id, reply.edits],
        timeout=WAIT_MS,
    )
    return reply.id


async def approve(page: Any, nth: int) -> None:
    """Click Approve on the ``nth`` approval card and see the card record the decision."""
    from playwright.async_api import expect

    cards = page.locator(".msg.bot", has_text="run_command")
    await expect(cards).to_have_count(nth, timeout=WAIT_MS)
    card = cards.nth(nth - 1)
    await expect(card).to_contain_text("Approval needed", timeout=WAIT_MS)
    await card.locator("button.action", has_text="Approve").click()
    await expect(card).to_contain_text("Approved", timeout=WAIT_MS)
    await expect(card.locator("button.action")).to_have_count(0, timeout=WAIT_MS)


UNCOVERED = """() => {
  const pins = document.getElementById("pins").getBoundingClientRect();
  const scroller = document.getElementById("scroller");
  const seen = scroller.getBoundingClientRect();
  const problems = [];
  for (const head of document.querySelectorAll(".msg .msg-head")) {
    const box = head.getBoundingClientRect();
    if (box.bottom <= seen.top || box.top >= seen.bottom) continue;  // scrolled out of view
    if (box.top < pins.bottom && box.bottom > pins.top) problems.push(`overlaps: ${head.innerText}`);
    const x = box.left + Math.min(20, box.width / 2);
    const y = Math.max(box.top, seen.top) + 1;
    const top = document.elementFromPoint(x, y);
    if (!head.contains(top) && box.top >= seen.top) problems.push(`covered: ${head.innerText}`);
  }
  return problems;
}"""


async def pins_cover_nothing(page: Any) -> None:
    """With the plan pinned, no visible message's name line is under it: scrolled to the top
    (the first message) and to the end."""
    from playwright.async_api import expect

    await expect(page.locator("#pins")).to_be_visible(timeout=WAIT_MS)
    for where in ("0", "scroller.scrollHeight"):
        await page.evaluate(
            f"() => {{ const scroller = document.getElementById('scroller'); scroller.scrollTop = {where}; }}"
        )
        assert await page.evaluate(UNCOVERED) == [], where
    first = page.locator(".msg .msg-head").first
    await page.evaluate("() => { document.getElementById('scroller').scrollTop = 0; }")
    pins, head = await page.locator("#pins").bounding_box(), await first.bounding_box()
    assert pins is not None and head is not None
    assert pins["y"] + pins["height"] <= head["y"], (pins, head)


def thread_of(page: Any) -> str:
    url: str = page.url
    assert "#/t/" in url
    return url.rsplit("#/t/", 1)[1]


async def test_a_whole_conversation(page: Any, served: tuple[str, PlaygroundAdapter]) -> None:
    from playwright.async_api import expect

    url, adapter = served
    await page.goto(url)
    await expect(page.locator("#model-label")).to_have_text("demo model (offline)", timeout=WAIT_MS)
    await expect(page.locator("#connection")).to_have_text("live", timeout=WAIT_MS)

    # The first message starts a thread; the reply streams in by edits and completes.
    await send(page, "Plan a small launch party for the team")
    await page.wait_for_url("**/#/t/*", timeout=WAIT_MS)
    thread_id = thread_of(page)
    await expect(page.locator(".msg.bot").first).to_be_visible(timeout=WAIT_MS)

    # The demo asks to run a command: a real approval card (the plan pinned above the thread,
    # covering no message's name); Approve resumes the run.
    await expect(page.locator(".msg.bot", has_text="Approval needed")).to_be_visible(
        timeout=WAIT_MS
    )
    await pins_cover_nothing(page)
    await approve(page, 1)
    first_reply = await answered(page, adapter, thread_id)
    shown = await page.evaluate("window.__seen")
    stages = shown["replies"][first_reply]
    assert len(stages) >= 2 and len(stages[0]) < len(stages[-1]), f"no streaming seen: {stages}"

    # The todo panel was pinned at the top while work went on, and every item got done.
    pinned = [text for text in shown["pins"] if text]
    assert pinned, "the todo panel was never pinned"
    assert any("Plan" in text for text in pinned)
    panel = page.locator(".msg.bot .msg-body", has_text="Plan ·").first
    await expect(panel).to_contain_text("done", timeout=WAIT_MS)
    done, total = await panel.evaluate(
        "n => n.innerText.match(/(\\d+)\\/(\\d+) done/).slice(1).map(Number)"
    )
    assert done == total > 0

    # A second message continues the same thread.
    await send(page, "Thanks! Now make it a surprise")
    await expect(page.locator(".msg.user")).to_have_count(2, timeout=WAIT_MS)
    assert thread_of(page) == thread_id
    await approve(page, 2)
    second_reply = await answered(page, adapter, thread_id)
    assert second_reply != first_reply
    await expect(page.locator(f'.msg[data-id="{second_reply}"]')).to_be_visible()
    await page.screenshot(path=str(SCREENSHOT))

    # After a reload the thread is still there, listed and shown as it was.
    await page.reload()
    await expect(page.locator("#connection")).to_have_text("live", timeout=WAIT_MS)
    await expect(page.locator(f'.thread-link[data-id="{thread_id}"]')).to_be_visible(
        timeout=WAIT_MS
    )
    await expect(page.locator(".msg.user")).to_have_count(2, timeout=WAIT_MS)
    await expect(page.locator(f'.msg[data-id="{second_reply}"]')).to_be_visible(timeout=WAIT_MS)
    title = adapter.state.thread(thread_id).title
    await expect(page.locator("#thread-title")).to_have_text(title)


MARKDOWN_CASES = [
    ("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"),
    ('"><img src=x onerror=alert(1)>', "<p>&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</p>"),
    (
        "**bold**, _it_, *also* and `a <b> *c*`",
        "<p><strong>bold</strong>, <em>it</em>, <em>also</em> and <code>a &lt;b&gt; *c*</code></p>",
    ),
    ("keep snake_case_names and 2*3*4", "<p>keep snake_case_names and 2*3*4</p>"),
    (
        "```py\n<b>x</b>\n**not bold**\n```",
        '<pre data-lang="py"><code>&lt;b&gt;x&lt;/b&gt;\n**not bold**</code></pre>',
    ),
    ("```\nstill streaming", "<pre><code>still streaming</code></pre>"),
    (
        "- one\n- **two**\n\n1. first\n2. second",
        "<ul><li>one</li><li><strong>two</strong></li></ul><ol><li>first</li><li>second</li></ol>",
    ),
    (
        "[docs](https://example.com/a?b=1&c=2) and [bad](javascript:alert(1))",
        '<p><a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a>'
        " and [bad](javascript:alert(1))</p>",
    ),
    ("line one\nline two\n\nnext", "<p>line one<br>line two</p><p>next</p>"),
]


async def test_markdown_is_rendered_safely(page: Any) -> None:
    await page.set_content("<!doctype html><body></body>")
    await page.add_script_tag(path=str(STATIC / "markdown.js"))
    for source, html in MARKDOWN_CASES:
        assert await page.evaluate("s => renderMarkdown(s)", source) == html, source


async def test_files_are_attached_shown_and_downloaded(
    page: Any, served: tuple[str, PlaygroundAdapter]
) -> None:
    """A CSV chosen with the + button goes with the message and shows as a link that downloads
    the same bytes; an HTML file the bot posts downloads too, never opening in the page."""
    from playwright.async_api import expect

    url, adapter = served
    await page.goto(url)
    await expect(page.locator("#connection")).to_have_text("live", timeout=WAIT_MS)
    await page.locator("#files").set_input_files(
        files=[{"name": "cities.csv", "mimeType": "text/csv", "buffer": CSV}]
    )
    await expect(page.locator("#chosen .file")).to_contain_text("cities.csv")
    await send(page, "Which city is largest?")
    await expect(page.locator("#chosen")).to_be_hidden()
    await page.wait_for_url("**/#/t/*", timeout=WAIT_MS)
    thread_id = thread_of(page)
    await answered(page, adapter, thread_id)
    link = page.locator(".msg.user a.file", has_text="cities.csv")
    await expect(link).to_contain_text(f"{len(CSV)} bytes")
    async with page.expect_download(timeout=WAIT_MS) as info:
        await link.click()
    download = await info.value
    assert download.suggested_filename == "cities.csv"
    assert await asyncio.to_thread(Path(await download.path()).read_bytes) == CSV

    surface = adapter._surface(thread_id)
    assert surface.files is not None
    await surface.files.send("page.html", HOSTILE)
    sent = page.locator(".msg.bot a.file", has_text="page.html")
    await expect(sent).to_be_visible(timeout=WAIT_MS)
    before = page.url
    async with page.expect_download(timeout=WAIT_MS) as info:
        await sent.click()
    download = await info.value
    assert await asyncio.to_thread(Path(await download.path()).read_bytes) == HOSTILE
    assert page.url == before and await page.evaluate("window.__ran") is None
