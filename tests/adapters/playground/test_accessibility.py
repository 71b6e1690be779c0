"""The playground page checked with axe-core in a real headless Chromium: no serious or
critical violation, in the light and the dark scheme, on a desktop and a phone (375 px wide),
with a thread that shows everything a thread can (a pinned plan, an approval card, code, a
note for you alone), and on a phone with the thread list open. Keyboard use is checked too:
Tab reaches the attach button and the pinned plan, which Enter opens in the thread.

axe-core is the pinned copy in ``tests/fakes/axe/`` (see its README)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.playground import PlaygroundAdapter
from tests.adapters.playground.test_browser import (
    ARGS,
    CHROMIUM,
    WAIT_MS,
    send,
    served,
    thread_of,
)

__all__ = ["served"]  # a fixture this module uses

AXE = Path(__file__).parents[2] / "fakes" / "axe" / "axe.min.js"
SIZES = {"desktop": {"width": 1200, "height": 820}, "phone": {"width": 375, "height": 740}}
SERIOUS = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ") + " " +
      (n.failureSummary || "").split("\\n").slice(1).join(" ")).join("; ")}`);
}"""

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"
    ),
    pytest.mark.timeout(120),
]


@pytest.fixture
async def chromium() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def open_page(chromium: Any, url: str, size: str, scheme: str) -> Any:
    context = await chromium.new_context(viewport=SIZES[size], color_scheme=scheme)
    page = await context.new_page()
    await page.goto(url)
    return page


async def a_full_thread(chromium: Any, served: tuple[str, PlaygroundAdapter]) -> str:
    """A thread with a pinned plan, a pending approval card and a note: its address."""
    from playwright.async_api import expect

    url, adapter = served
    page = await open_page(chromium, url, "desktop", "light")
    await send(page, "run ls")
    await page.wait_for_url("**/#/t/*", timeout=WAIT_MS)
    await expect(page.locator(".msg.bot", has_text="Approval needed")).to_be_visible(
        timeout=WAIT_MS
    )
    await asyncio.wait_for(adapter.wait_idle(), WAIT_MS / 1000)
    address = f"{url}/#/t/{thread_of(page)}"
    await page.context.close()
    return address


async def serious(page: Any) -> list[str]:
    await page.add_script_tag(path=str(AXE))
    found: list[str] = await page.evaluate(SERIOUS)
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_no_serious_violation_in_either_scheme_on_desktop_and_phone(
    chromium: Any, served: tuple[str, PlaygroundAdapter], scheme: str
) -> None:
    from playwright.async_api import expect

    address = await a_full_thread(chromium, served)
    for size in SIZES:
        page = await open_page(chromium, address, size, scheme)
        await expect(page.locator("#pins")).to_be_visible(timeout=WAIT_MS)
        await expect(page.locator("#connection")).to_have_text("live", timeout=WAIT_MS)
        await page.locator("#input").fill("/threadline status")
        await page.keyboard.press("Enter")
        await expect(page.locator(".ephemeral")).to_contain_text("Model:", timeout=WAIT_MS)
        found = await serious(page)
        assert found == [], "\n".join([scheme, size, *found])
        if size == "phone":
            await page.locator("#menu").click()
            await expect(page.locator("#new-thread")).to_be_visible(timeout=WAIT_MS)
            assert await serious(page) == [], (scheme, size, "thread list open")
        await page.context.close()


async def test_the_keyboard_reaches_attach_and_the_pinned_plan(
    chromium: Any, served: tuple[str, PlaygroundAdapter]
) -> None:
    from playwright.async_api import expect

    address = await a_full_thread(chromium, served)
    page = await open_page(chromium, address, "desktop", "light")
    pin = page.locator("#pins .pin")
    await expect(pin).to_be_visible(timeout=WAIT_MS)
    card = page.locator(".msg.bot", has_text="Approval needed")
    await expect(card).to_be_visible(timeout=WAIT_MS)  # the thread drawn whole: nothing redraws
    await page.wait_for_load_state("networkidle")
    await page.locator("#input").focus()
    await page.keyboard.press("Shift+Tab")
    await expect(page.locator("#attach")).to_be_focused()
    async with page.expect_file_chooser(timeout=WAIT_MS):
        await page.locator("#attach").press("Enter")  # Enter on the focused button

    await pin.focus()
    await expect(pin).to_have_attribute("role", "button")
    await page.keyboard.press("Enter")
    panel = page.locator(f'.msg[data-id="{await pin.get_attribute("data-id")}"]')
    await expect(panel).to_be_focused()
    await expect(panel).to_have_class("msg bot pinned flash")
    await page.context.close()


async def test_on_a_phone_the_thread_list_is_a_drawer(
    chromium: Any, served: tuple[str, PlaygroundAdapter]
) -> None:
    """At 375 px the thread list, New thread and the name field are one button away."""
    from playwright.async_api import expect

    address = await a_full_thread(chromium, served)
    page = await open_page(chromium, address, "phone", "light")
    menu, new_thread = page.locator("#menu"), page.locator("#new-thread")
    await expect(menu).to_be_visible(timeout=WAIT_MS)
    for hidden in (new_thread, page.locator("#user-name"), page.locator(".thread-link")):
        await expect(hidden).to_be_hidden()
    await menu.click()
    await expect(menu).to_have_attribute("aria-expanded", "true")
    await expect(new_thread).to_be_focused()
    await expect(page.locator("#user-name")).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(new_thread).to_be_hidden()
    await expect(menu).to_be_focused()

    await menu.click()
    await new_thread.click()  # a new thread: the drawer closes, the page is empty
    await expect(new_thread).to_be_hidden()
    await expect(page.locator("#empty")).to_be_visible()
    await menu.click()
    await page.locator(".thread-link").click()  # back to the thread
    await expect(page.locator(".thread-link")).to_be_hidden()
    await expect(page.locator("#pins")).to_be_visible(timeout=WAIT_MS)
    await page.context.close()
