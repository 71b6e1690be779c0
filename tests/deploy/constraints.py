"""The runtime dependencies that ``pip install .`` brings in, as this environment resolved them:
what ``deploy/constraints.txt`` pins for the image. Regenerate it after changing the project's
dependencies (in an environment made with ``pip install -e '.[test,docs]'``):

    python -m tests.deploy.constraints > deploy/constraints.txt
"""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
HEADER = (
    "# The runtime dependencies of `pip install .`, pinned as resolved and tested; the image\n"
    "# installs with `pip install -c deploy/constraints.txt .`. Regenerate after changing the\n"
    "# dependencies in pyproject.toml: python -m tests.deploy.constraints > deploy/constraints.txt\n"
)


def project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(r) for r in project["dependencies"]]


def runtime_closure() -> dict[str, str]:
    """Every distribution ``pip install .`` needs here (markers evaluated for this Python and
    platform, extras followed), by canonical name, with its installed version."""
    found: dict[str, str] = {}
    pending: list[tuple[Requirement, str]] = [(r, "") for r in project_requirements()]
    seen: set[tuple[str, str]] = set()
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as exc:
            raise SystemExit(f"{name} is not installed: install the project first") from exc
        found[name] = dist.version
        for wanted in ["", *sorted(requirement.extras)]:
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            pending.extend((Requirement(r), wanted) for r in dist.requires or [])
    return dict(sorted(found.items()))


def render(pins: dict[str, str]) -> str:
    return HEADER + "".join(f"{name}=={version}\n" for name, version in pins.items())


def read(path: Path) -> dict[str, str]:
    """A constraints file's pins (``name==version`` lines), by canonical name."""
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"not pinned with ==: {line}"
            pins[canonicalize_name(name)] = version
    return pins


if __name__ == "__main__":
    sys.stdout.write(render(runtime_closure()))
