"""Screenshots of the playground for the docs, taken from the real program.

Starts ``threadline run`` with nothing configured (the playground on the offline demo model) on a
free port, with a temporary data directory and working directory, drives the page in Debian's
chromium with Playwright like a person would, and saves PNGs into ``docs/images/``:

- ``playground.png``: "Run ls", its plan pinned at the top and the approval card of the
  command;
- ``playground-approved.png``: the same thread once Approve was clicked: the card says who
  approved and what the command did, the plan is done, and the reply says what happened.

Run from the repository root: ``python docs/screenshots.py`` (needs /usr/bin/chromium, the
``playwright`` package, never ``playwright install``, and Debian's ``fonts-noto-color-emoji`` for
the cards' emoji).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1200, "height": 760}
WAIT_MS = 30_000
SETTINGS_PREFIXES = ("THREADLINE_", "OPENAI_", "SLACK_", "DISCORD_")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(data_dir: Path, port: int) -> dict[str, str]:
    """This environment without any setting, plus a data directory and a port of our own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}
    env.update(
        THREADLINE_DATA_DIR=str(data_dir),
        THREADLINE_HTTP_PORT=str(port),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    return env


def threadline() -> list[str]:
    found = shutil.which("threadline", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "adapters.cli"]


async def started(process: asyncio.subprocess.Process) -> str:
    """The playground's address, from the line ``threadline run`` prints when it is up."""
    assert process.stdout is not None
    while line := await asyncio.wait_for(process.stdout.readline(), 60):
        if match := re.search(r"Threadline playground: (\S+)", line.decode()):
            return match.group(1)
    raise RuntimeError(f"threadline run exited with {await process.wait()} before serving")


async def send(page: Any, text: str) -> None:
    from playwright.async_api import expect

    await page.locator("#input").fill(text)
    await page.keyboard.press("Enter")
    await expect(page.locator(".msg.user .msg-body", has_text=text)).to_be_visible(timeout=WAIT_MS)


async def card(page: Any) -> Any:
    """The latest approval card, once its buttons show."""
    from playwright.async_api import expect

    found = page.locator(".msg.bot", has_text="Approval needed").last
    await expect(found.locator("button.action", has_text="Approve")).to_be_visible(timeout=WAIT_MS)
    return found


async def idle(page: Any) -> None:
    """The run is over: its plan done and unpinned, no status line, no button left."""
    done = """() => document.getElementById("pins").hidden
                 && document.getElementById("status").hidden
                 && !document.querySelector(".msg.bot button.action")"""
    await page.wait_for_function(done, timeout=WAIT_MS)
    await page.wait_for_timeout(1000)
    await page.wait_for_function(done, timeout=WAIT_MS)


async def shoot(page: Any, name: str) -> None:
    await page.wait_for_timeout(400)  # let the last edit's transition settle
    await page.screenshot(path=str(IMAGES / name))
    print(f"wrote docs/images/{name}")


async def drive(url: str) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            context = await browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
            page = await context.new_page()
            await page.goto(url)
            await page.locator("#user-name").fill("Alice")

            await send(page, "Run ls")
            approval = await card(page)
            await shoot(page, "playground.png")

            await approval.locator("button.action", has_text="Approve").click()
            await idle(page)
            await shoot(page, "playground-approved.png")
        finally:
            await browser.close()


async def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="threadline-screenshots-") as tmp:
        data_dir = Path(tmp) / "data"
        process = await asyncio.create_subprocess_exec(
            *threadline(),
            "run",
            cwd=tmp,  # no .env or threadline.toml of this checkout is read
            env=environment(data_dir, free_port()),
            stdout=asyncio.subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            await drive(await started(process))
        finally:
            process.terminate()
            await process.wait()


if __name__ == "__main__":
    asyncio.run(main())
