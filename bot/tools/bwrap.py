"""Commands in a bubblewrap sandbox.

Each command gets new user, PID, IPC, UTS and network namespaces (the network only when the
operator allows it for the tool); the system directories (``/usr``, ``/bin``, ``/lib*`` and a
few files of ``/etc``) read-only; the thread's workspace at ``/workspace``, its only writable
place besides a small private ``/tmp`` and ``/dev/shm``; a ``/proc`` of its own PID namespace; a
short fixed environment; and resource limits (processes, address space, CPU time, file size,
open files). Nothing of the bot is mounted: not its data directory, its working directory,
``.env``, ``threadline.toml``, other workspaces, ``/root`` or ``/home``.

Everything a command starts dies with it: bubblewrap's init is PID 1 of the namespace and exits
when the shell does, which kills every other process in it, and ``--die-with-parent`` ends the
sandbox when the bot dies, even by SIGKILL.

When the bot runs as root the sandbox runs as user and group 65534 (nobody) instead, so that the
process limit holds and no root-owned file is the command's own: an outer bubblewrap (as root)
shows the workspace at a path that user can reach (bubblewrap resolves the paths it binds as
the user it runs as) and ``setpriv`` drops to it. That outer bubblewrap has a PID namespace of
its own too, so that its end (when the bot dies) takes the whole sandbox with it.

A bind mount shows the path of its source in ``/proc/self/mountinfo`` (the "root" field is the
path inside the source's filesystem, whatever staging path the bind went through), which would
tell a command where the bot's data directory is. As root, the outer bubblewrap therefore
mounts an overlay whose upper layer is the workspace (an empty lower layer; every write lands in
the workspace itself), given by relative paths from inside the workspace: the overlay is a
filesystem of its own whose root is ``/`` and whose options read ``upperdir=.`` and
``workdir=../.overlay-…`` (a scratch directory beside the workspaces, removed after the
command). Where the workspace's filesystem cannot be an overlay's upper layer (it is itself an
overlay, say), the outer bubblewrap falls back to a bind mount and the path shows. Without
root, the inner bubblewrap alone cannot do this (it has no overlay option before 0.9, and its
overlay options name the source by its full path): the path shows.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.tools.process import CommandResult, run_process
from bot.tools.sandbox import Workspace

WORKSPACE = "/workspace"
"""Where the thread's workspace is in the sandbox (and the command's working directory)."""
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
ENVIRONMENT = {
    "PATH": SANDBOX_PATH,
    "HOME": WORKSPACE,
    "PWD": WORKSPACE,
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PAGER": "cat",
}
"""The whole environment of a sandboxed command."""
ROOT_SANDBOX_ID = 65534
"""The user and group a command runs as when the bot runs as root."""
HOSTNAME = "threadline"
ETC_FILES = (
    "passwd",
    "group",
    "hosts",
    "resolv.conf",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "services",
    "protocols",
    "localtime",
    "timezone",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl/certs",
    "ca-certificates.conf",
    "mime.types",
    "os-release",
    "debian_version",
    "magic",
    "inputrc",
)
"""What of ``/etc`` a command sees (those that exist), read-only. Not ``shadow``."""
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SHIM_WORKSPACE = "/tmp/workspace"
_SHIM_ALL = "/tmp/workspaces"
_SHIM_STAGE = (
    'mkdir /tmp/lower /tmp/workspace && (cd "/tmp/workspaces/$1" && '
    '{ mount -t overlay overlay -o "lowerdir=/tmp/lower,upperdir=.,workdir=../$2" '
    "/tmp/workspace 2>/dev/null || mount --bind . /tmp/workspace; }) && "
    'shift 2 && exec "$@"'
)
"""Run by the outer (root) bubblewrap: the workspace at ``/tmp/workspace`` as an overlay that
names no host path (a bind mount where an overlay cannot be made)."""
OVERLAY_PREFIX = ".overlay-"
STALE_OVERLAY_S = 3600.0
"""A scratch directory this old was left by a process killed during its command (no command
runs this long): the first command after a start removes it."""
PROBE_TIMEOUT_S = 10.0
REMEDY = (
    "To fix it: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap); allow "
    "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, and on Ubuntu "
    "24.04+ kernel.apparmor_restrict_unprivileged_userns=0); in Docker, run the container with "
    "--security-opt seccomp=unconfined --security-opt apparmor=unconfined (or a seccomp profile "
    "that allows creating namespaces); or, knowingly, set THREADLINE_SANDBOX=none to run "
    "commands unsandboxed as the bot's own user"
)


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one command (each process; the processes count is for the command).

    Without a cgroup for the command, its memory in all is bounded by the product of the two:
    :attr:`total_memory_bytes` (each process's address space, at most ``processes`` of them).
    """

    processes: int = 32
    memory_bytes: int = 256 << 20
    """Address space of each process."""
    file_bytes: int = 1 << 30
    """Largest file a process may write."""
    open_files: int = 1024
    tmp_bytes: int = 256 << 20
    """Size of the private ``/tmp``."""
    shm_bytes: int = 64 << 20
    """Size of the private ``/dev/shm``."""

    @property
    def total_memory_bytes(self) -> int:
        """The most memory a command holds: its processes together, and its private ``/tmp``
        and ``/dev/shm`` (memory-backed)."""
        return self.processes * self.memory_bytes + self.tmp_bytes + self.shm_bytes

    def describe_memory(self) -> str:
        """What ``threadline doctor`` says about the bound on a command's memory."""
        return (
            f"commands' memory: per process {self.memory_bytes >> 20} MiB × {self.processes} "
            f"processes, with /tmp and /dev/shm at most {self.total_memory_bytes >> 20} MiB "
            "in all "
            "(THREADLINE_COMMAND_PROCESS_MEMORY_MIB, THREADLINE_COMMAND_PROCESSES)"
        )

    def prlimit(self, timeout_s: float) -> list[str]:
        """The ``prlimit`` command line that applies these limits, CPU time from the timeout."""
        cpu = math.ceil(timeout_s) + 1
        return [
            "prlimit",
            f"--nproc={self.processes}",
            f"--as={self.memory_bytes}",
            f"--fsize={self.file_bytes}",
            f"--nofile={self.open_files}",
            "--core=0",
            f"--cpu={cpu}:{cpu + 1}",
            "--",
        ]


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether the sandbox works here, and in words why (not)."""

    usable: bool
    detail: str
    executable: str = ""


def sweep_overlays(workspaces: Path, now: float) -> int:
    """Remove the overlays' scratch directories that processes killed during a command left
    beside the workspaces; returns how many."""
    removed = 0
    for entry in workspaces.glob(f"{OVERLAY_PREFIX}*"):
        try:
            stale = now - entry.lstat().st_mtime > STALE_OVERLAY_S
        except FileNotFoundError:
            continue
        if stale and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


class BwrapRunner:
    """Runs ``/bin/sh -c COMMAND`` (or a program with its arguments, no shell) in the sandbox,
    in the workspace."""

    note = (
        f"It runs in a sandbox: the workspace is {WORKSPACE} (the only place whose files "
        "last, besides a small /tmp for the call), the system is read-only, and there is no "
        "network unless the operator allowed it."
    )

    def __init__(
        self, executable: str, limits: Limits | None = None, *, as_root: bool | None = None
    ) -> None:
        self.executable = executable
        self.limits = limits or Limits()
        self.as_root = os.geteuid() == 0 if as_root is None else as_root
        self.owner = (ROOT_SANDBOX_ID, ROOT_SANDBOX_ID) if self.as_root else None
        self._system = system_mounts()
        self._swept: set[Path] = set()

    async def run(
        self, command: str | Sequence[str], workspace: Workspace, timeout_s: float, *, network: bool
    ) -> CommandResult:
        work = None
        if self.as_root:
            if (parent := workspace.root.parent) not in self._swept:
                self._swept.add(parent)
                await asyncio.to_thread(sweep_overlays, parent, time.time())
            work = parent / f"{OVERLAY_PREFIX}{secrets.token_hex(8)}"
            work.mkdir(mode=0o700)
        argv = self.argv(command, workspace.root, network=network, timeout_s=timeout_s, work=work)
        try:
            return await run_process(argv, Path("/"), timeout_s, ENVIRONMENT)
        finally:
            if work is not None:
                await asyncio.to_thread(shutil.rmtree, work, True)

    def argv(
        self,
        command: str | Sequence[str],
        root: Path,
        *,
        network: bool,
        timeout_s: float,
        work: Path | None = None,
    ) -> list[str]:
        """The whole command line: bubblewrap, the limits, the shell (for a command line) or
        the program (for an argument list). ``work`` is the overlay's scratch directory beside
        ``root`` (empty; as root only)."""
        source = str(root)
        shim: list[str] = []
        if self.as_root:
            if work is None or work.parent != root.parent:
                raise ValueError(
                    "as root, a command needs a scratch directory beside its workspace"
                )
            shim = [
                self.executable,
                "--unshare-pid",
                "--dev-bind",
                "/",
                "/",
                "--tmpfs",
                "/tmp",
                "--bind",
                str(root.parent),
                _SHIM_ALL,
                "--die-with-parent",
                "--",
                "/bin/sh",
                "-c",
                _SHIM_STAGE,
                "sh",
                root.name,
                work.name,
                "setpriv",
                f"--reuid={ROOT_SANDBOX_ID}",
                f"--regid={ROOT_SANDBOX_ID}",
                "--clear-groups",
                "--no-new-privs",
                "--",
            ]
            source = _SHIM_WORKSPACE
        limits = self.limits
        return [
            *shim,
            self.executable,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            *(["--share-net"] if network else []),
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            HOSTNAME,
            *self._system,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(limits.shm_bytes),
            "--tmpfs",
            "/dev/shm",
            "--size",
            str(limits.tmp_bytes),
            "--tmpfs",
            "/tmp",
            "--bind",
            source,
            WORKSPACE,
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--chdir",
            WORKSPACE,
            "--",
            *limits.prlimit(timeout_s),
            *(["/bin/sh", "-c", command] if isinstance(command, str) else command),
        ]


@functools.cache
def system_mounts() -> tuple[str, ...]:
    """bubblewrap options showing the system read-only: merged-/usr links stay links."""
    options: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path("/", name)
        if path.is_symlink():
            options += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            options += ["--ro-bind", str(path), str(path)]
    for name in ETC_FILES:
        options += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return tuple(options)


@functools.cache
def probe(executable: str | None = None) -> Availability:
    """Whether a sandboxed command runs here: tried once, with a real (empty) workspace."""
    found = executable or shutil.which("bwrap")
    if not found:
        return Availability(False, "bubblewrap is not installed (no bwrap on PATH)")
    needed = ["prlimit", "setpriv", "mount"] if os.geteuid() == 0 else ["prlimit"]
    for name in needed:
        if shutil.which(name, path=SANDBOX_PATH) is None:
            return Availability(False, f"{name} (util-linux) is missing from {SANDBOX_PATH}")
    runner = BwrapRunner(found)
    with tempfile.TemporaryDirectory(prefix="threadline-probe-") as base:
        directory, work = Path(base, "workspace"), Path(base, f"{OVERLAY_PREFIX}probe")
        directory.mkdir()
        work.mkdir()
        if runner.owner is not None:
            os.chown(directory, *runner.owner)
        argv = runner.argv("true", directory, network=False, timeout_s=PROBE_TIMEOUT_S, work=work)
        try:
            done = subprocess.run(
                argv,
                env=ENVIRONMENT,
                cwd="/",
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Availability(False, f"{found} could not be run: {exc}")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        reason = said[-1] if said else f"exit status {done.returncode}"
        return Availability(False, f"{found} cannot create the sandbox's namespaces: {reason}")
    who = (
        f"as uid {ROOT_SANDBOX_ID}, since the bot runs as root"
        if runner.as_root
        else "as the bot's user"
    )
    return Availability(True, f"{found}, {who}", found)
