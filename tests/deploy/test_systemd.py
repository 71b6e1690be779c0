"""deploy/threadline.service: the hardening it ships, checked directive by directive, and the
unit as systemd itself reads it (``systemd-analyze verify``: an unknown or misspelt key is an
error here, where systemd would only warn and ignore it)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from bot.config import Settings

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "threadline.service"
DOCS = ROOT / "docs" / "operations" / "systemd.md"


def directives() -> dict[str, list[str]]:
    """``Section.Key`` → every value given, in order."""
    found: dict[str, list[str]] = {}
    section = ""
    for raw in UNIT.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        found.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return found


def one(key: str) -> str:
    (value,) = directives()[f"Service.{key}"]
    return value


def test_the_unit_is_hardened() -> None:
    assert one("NoNewPrivileges") == "yes"
    assert one("ProtectSystem") == "strict"
    assert one("PrivateTmp") == "yes"
    assert one("UMask") == "0077"
    assert one("User") not in ("root", "0")


def test_the_data_directory_is_the_only_writable_path() -> None:
    workdir = Path(one("WorkingDirectory"))
    default = Path(str(Settings.model_fields["data_dir"].default))
    assert not default.is_absolute()  # relative to the working directory
    assert one("ReadWritePaths").split() == [str(workdir / default)]
    assert str(workdir / default) in DOCS.read_text(encoding="utf-8")


def test_a_bad_configuration_is_not_restarted_every_few_seconds() -> None:
    assert one("Restart") == "on-failure"
    # adapters/cli.py exits 2 on an invalid configuration (tests/adapters/test_cli.py)
    assert one("RestartPreventExitStatus").split() == ["2"]


def test_nothing_refuses_the_sandbox_its_namespaces() -> None:
    found = directives()
    assert "Service.RestrictNamespaces" not in found
    assert "Service.PrivateUsers" not in found
    assert "Service.SystemCallFilter" not in found


def test_the_install_steps_are_written_down() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    for step in (
        "useradd --system",
        "python3 -m venv",
        "install -d -o threadline -g threadline -m 0700",
        "cp deploy/threadline.service /etc/systemd/system/",
        "systemctl daemon-reload",
        "systemctl enable --now threadline",
        "threadline doctor",
        "RestartPreventExitStatus=2",
    ):
        assert step in docs, step


def test_systemd_reads_every_directive() -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail(
            "systemd-analyze is missing: install Debian's systemd (.ci/run does) to check the unit"
        )
    text = UNIT.read_text(encoding="utf-8")
    text = text.replace(one("ExecStart").split()[0], "/bin/true")  # the virtualenv is not here
    with tempfile.TemporaryDirectory() as base:
        unit = Path(base, "threadline.service")
        unit.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [analyze, "verify", "--man=no", str(unit)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 0 and not said, said
