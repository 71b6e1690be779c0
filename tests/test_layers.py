"""The core never imports a platform SDK or an adapter; each vendor library has one home."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_BOT = ("slack_bolt", "slack_sdk", "discord", "adapters", "aiohttp")
HOMES = {
    "openai": ("bot/llm/openai_model.py",),
    "aiosqlite": ("bot/storage/sqlite.py", "bot/storage/sqlite_extra.py"),
    "apscheduler": ("bot/scheduler/timer.py",),
    "slack_bolt": ("adapters/slack/",),
    "slack_sdk": ("adapters/slack/",),
    "discord": ("adapters/discord/",),
}
"""Where each vendor library may be imported: a file, or a folder ending in ``/``."""


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_bot_imports_no_platform_sdk_and_no_adapter() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) & set(FORBIDDEN_IN_BOT)) for p in _sources("bot")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_each_vendor_library_has_one_home() -> None:
    for library, homes in HOMES.items():
        users = {
            str(p.relative_to(ROOT))
            for folder in ("bot", "adapters")
            for p in _sources(folder)
            if library in _imports(p)
        }
        outside = {u for u in users if not u.startswith(homes)}
        assert not outside, f"{library} is imported outside {homes}: {outside}"


def test_importing_bot_starts_nothing() -> None:
    import threading

    before = {t.name for t in threading.enumerate()}
    import bot.core  # noqa: F401

    assert {t.name for t in threading.enumerate()} == before
