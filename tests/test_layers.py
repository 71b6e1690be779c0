"""The core never imports a platform SDK or an adapter; adapters never import each other and
reach the core only through ``bot.api``; each vendor library has one home."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_BOT = ("slack_bolt", "slack_sdk", "discord", "adapters")
HOMES = {
    "openai": ("bot/llm/openai_model.py",),
    "aiosqlite": ("bot/storage/sqlite",),
    "asyncpg": ("bot/storage/postgres",),
    "apscheduler": ("bot/scheduler/timer.py",),
    "croniter": ("bot/scheduler/when.py",),
    "prometheus_client": ("bot/infra/metrics.py",),
    "re2": ("bot/tools/patterns.py",),
    "mcp": ("bot/mcp/sdk/",),
    "mcp_types": ("bot/mcp/sdk/",),
    "httpx2": ("bot/llm/", "bot/mcp/sdk/"),
    "aiohttp": ("bot/tools/http.py", "adapters/"),
    "slack_bolt": ("adapters/slack/",),
    "slack_sdk": ("adapters/slack/",),
    "discord": ("adapters/discord/",),
}
"""Where each vendor library may be imported: a file, or a folder ending in ``/``."""


PLATFORM_ADAPTERS = ("slack", "discord", "playground")


def _modules(path: Path) -> set[str]:
    """Every module ``path`` imports, by its full dotted name."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _imports(path: Path) -> set[str]:
    return {name.split(".")[0] for name in _modules(path)}


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_bot_imports_no_platform_sdk_and_no_adapter() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) & set(FORBIDDEN_IN_BOT))
        for p in _sources("bot")
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


def test_adapters_do_not_import_each_other() -> None:
    offenders = {}
    for adapter in PLATFORM_ADAPTERS:
        others = tuple(f"adapters.{o}" for o in PLATFORM_ADAPTERS if o != adapter)
        for path in _sources(f"adapters/{adapter}"):
            found = sorted(m for m in _modules(path) if m.startswith(others))
            if found:
                offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


PORT = ("bot.api", "bot.config", "bot.errors")
"""All a platform adapter may import of the core."""


def test_platform_adapters_import_the_core_only_through_its_port() -> None:
    offenders = {}
    for adapter in PLATFORM_ADAPTERS:
        for path in _sources(f"adapters/{adapter}"):
            found = sorted(
                m
                for m in _modules(path)
                if m.split(".")[0] == "bot" and not (m in PORT or m.startswith(PORT[0] + "."))
            )
            if found:
                offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


def test_bot_has_at_most_six_modules_loose_at_its_top() -> None:
    loose = sorted(p.name for p in (ROOT / "bot").glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 6, loose


def test_importing_bot_starts_nothing() -> None:
    import threading

    before = {t.name for t in threading.enumerate()}
    import bot.core  # noqa: F401

    assert {t.name for t in threading.enumerate()} == before
