"""The docs site's generated reference covers the code, and the README stays a front page whose
commands and links work (``mkdocs build --strict`` in CI checks the rest of the site)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs/gen/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_page_has_every_setting_with_a_description() -> None:
    gen = reference()
    page = gen.settings()
    for _, cls in gen.SETTINGS_MODELS:
        for name, _info in gen.setting_fields(cls):
            (line,) = [
                r for r in page.splitlines() if r.startswith(f"| `{gen.env_name(cls, name)}` |")
            ]
            assert line.rstrip(" |").split(" | ")[-1].strip(), f"{name} has no description"


def test_the_toml_page_has_every_section_and_key() -> None:
    gen = reference()
    gen.check_supplement()
    page = gen.toml()
    for path, _model, keys in gen.toml_sections():
        assert f"## `[{path}]`" in page
        assert keys and all(f"| `{key}` |" in page for key in keys), path
    for section in (
        "access",
        "tools.TOOL",
        "tools.fetch_url",
        "tools.web_search",
        'channels."PREFIX"',
        "mcp_servers.SERVER",
        "mcp_servers.SERVER.gating.TOOL",
        "custom_tools.NAME",
        "custom_tools.NAME.parameters.PARAMETER",
    ):
        assert f"## `[{section}]`" in page, section
    assert "| `allow_domains` |" in page and "| `dms` |" in page


def test_the_cli_page_has_every_command_and_option() -> None:
    page = reference().cli()
    for command in ("run", "doctor", "discord-invite", "audit", "rules", "healthcheck"):
        assert f"## `threadline {command}`" in page
    for option in ("--thread", "--since", "--limit", "--channel", "--revoke"):
        assert f"| `{option}` |" in page


def test_the_readme_is_a_front_page_with_the_commands_ci_and_users_run() -> None:
    assert len(README.splitlines()) <= 250
    for command in ("pip install -e '.[test]'", "threadline run\n", "pytest\n"):
        assert f"```sh\n{command}" in README or command in README, command
    for target in re.findall(r"\]\(((?!https?://)[^)#]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).exists(), target
