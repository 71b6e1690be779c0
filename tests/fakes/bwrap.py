"""Stand-ins for bubblewrap as some machines have it: a ``bwrap`` that cannot create
namespaces (as in a container whose seccomp profile forbids them, or a kernel without
unprivileged user namespaces) answers every call with its real error message."""

from __future__ import annotations

from pathlib import Path

REFUSAL = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)


def refusing_bwrap(directory: Path) -> Path:
    """Write ``directory/bwrap``, which fails as bubblewrap does without namespaces."""
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / "bwrap"
    program.write_text(f'#!/bin/sh\necho "{REFUSAL}" >&2\nexit 1\n')
    program.chmod(0o755)
    return program
