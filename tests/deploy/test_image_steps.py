"""The Dockerfile's own steps, run on this machine as far as they can be without Docker: the
user it creates, the data directory it makes before ``VOLUME``, its ``CMD`` run as that
unprivileged user with its ``ENV``, and its ``HEALTHCHECK`` against a custom
``THREADLINE_HTTP_PORT``. (apt-get and pip are not run: the packages are this machine's.)"""

from __future__ import annotations

import asyncio
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy import constraints
from tests.deploy.dockerfile import Instruction, env_of, healthcheck_command, last, read
from tests.e2e.test_process_restart import free_port

ROOT = Path(__file__).resolve().parents[2]
IMAGE = read(ROOT / "deploy" / "Dockerfile")
WAIT = 30.0
TOKEN = "image-steps-token-0123456789"


def runs(fragment: str) -> list[Instruction]:
    return [i for i in IMAGE if i.keyword == "RUN" and fragment in i.value]


def test_the_image_installs_bubblewrap_and_runs_as_its_own_user() -> None:
    (install,) = runs("apt-get install")
    assert "bubblewrap" in install.words()
    user = last(IMAGE, "USER").value
    assert user not in ("root", "0")
    (create,) = runs("useradd")
    assert create.words()[-1] == user
    volume = last(IMAGE, "VOLUME").value
    (make,) = runs(volume)
    assert IMAGE.index(create) < IMAGE.index(make) < IMAGE.index(last(IMAGE, "VOLUME"))
    assert f"{user}:{user}" in make.value or f"-o {user}" in make.value  # owned by the user
    health = healthcheck_command(last(IMAGE, "HEALTHCHECK"))
    assert health == ["threadline", "healthcheck"]  # the port comes from the settings
    assert last(IMAGE, "CMD").words() == ["threadline", "run"]


def test_the_image_installs_the_tested_versions_from_the_constraints_file() -> None:
    (install,) = runs("pip install")
    words = install.words()
    assert words[words.index("-c") + 1] == "constraints.txt" and words[-1] == "."
    (copy,) = (i for i in IMAGE if i.keyword == "COPY" and "deploy/constraints.txt" in i.words())
    assert copy.words()[-1] == "./"  # beside pyproject.toml, in the WORKDIR pip runs in
    assert IMAGE.index(copy) < IMAGE.index(install)


def test_the_constraints_pin_every_runtime_dependency_within_the_projects_ranges() -> None:
    """deploy/constraints.txt pins each of the project's dependencies at a version its range in
    pyproject.toml admits, and no test or docs tool. (It is not compared with what is installed
    here: a fresh virtualenv may hold newer releases. After a dependency change, regenerate it:
    python -m tests.deploy.constraints > deploy/constraints.txt)"""
    pinned = constraints.read(ROOT / "deploy" / "constraints.txt")
    for requirement in constraints.project_requirements():
        name = constraints.canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not pinned"
        assert requirement.specifier.contains(pinned[name]), (name, pinned[name])
    assert not {"pytest", "ruff", "mypy", "mkdocs-material"} & set(pinned)


def test_the_base_image_is_pinned_or_says_how_to_pin_it() -> None:
    base = last(IMAGE, "FROM").value
    if "@sha256:" not in base:
        text = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
        assert f"FROM {base}@sha256:" in text  # the comment showing how to pin it


@dataclass
class ImageRoot:
    """A fresh directory standing in for the image's file system, and the user it runs as."""

    path: Path
    user: str
    uid: int
    gid: int
    python: str = ""

    def inside(self, absolute: str) -> Path:
        return self.path / absolute.lstrip("/")


def swap(words: list[str], image: ImageRoot, image_user: str) -> list[str]:
    """The step's words for this machine: the test's user, paths under the image root."""
    out = []
    for word in words:
        word = word.replace(f"{image_user}:{image_user}", f"{image.user}:{image.user}")
        if word == image_user:
            word = image.user
        elif word.startswith("/"):
            word = str(image.inside(word))
        out.append(word)
    return out


@pytest.fixture
def image_root() -> Iterator[ImageRoot]:
    if os.geteuid() != 0:
        pytest.skip(
            "needs root: the test creates the image's unprivileged user with useradd "
            "and starts the bot as that user"
        )
    if shutil.which("useradd") is None:
        pytest.skip("needs useradd to create the image's unprivileged user")
    path = Path(tempfile.mkdtemp(prefix="threadline-image-"))
    path.chmod(0o755)
    name = f"tl{secrets.token_hex(4)}"
    image_user = last(IMAGE, "USER").value
    (create,) = runs("useradd")
    words = create.words()
    if "--uid" in words:  # the image's uid may be taken on this machine
        at = words.index("--uid")
        del words[at : at + 2]
    words = [*words[:-1], "--home-dir", str(path / "home" / name), words[-1]]
    (path / "home").mkdir(mode=0o755)
    subprocess.run(swap(words, ImageRoot(path, name, 0, 0), image_user), check=True)
    entry = pwd.getpwnam(name)
    try:
        image = ImageRoot(path, name, entry.pw_uid, entry.pw_gid)
        image.python = user_python(image)
        yield image
    finally:
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
        shutil.rmtree(path, ignore_errors=True)


def user_python(image: ImageRoot) -> str:
    """A Python of this version that the image's user may run (the image has its own on PATH;
    this one's may live in a directory only root can enter)."""
    candidates = [
        sys.executable,
        getattr(sys, "_base_executable", ""),
        *(
            shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path=p) or ""
            for p in ("/usr/local/bin", "/usr/bin")
        ),
    ]
    wanted = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in filter(None, candidates):
        try:
            probe = subprocess.run(
                [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                user=image.uid,
                group=image.gid,
                extra_groups=[],
                capture_output=True,
                text=True,
                check=False,
                cwd="/",
            )
        except PermissionError:  # in a directory the user may not enter
            continue
        if probe.returncode == 0 and probe.stdout.strip() == wanted:
            return candidate
    pytest.skip(f"no Python {wanted} that an unprivileged user may run")


def program(python: str, words: list[str]) -> list[str]:
    """``threadline …`` as the image runs it (there, the console script on PATH)."""
    assert words[0] == "threadline"
    return [python, "-m", "adapters.cli", *words[1:]]


async def as_user(
    image: ImageRoot, words: list[str], env: dict[str, str], cwd: Path
) -> asyncio.subprocess.Process:
    # this checkout and its installed packages, as the image's `pip install .` provides them
    path = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    return await asyncio.create_subprocess_exec(
        *program(image.python, words),
        env=env | {"PYTHONPATH": path},
        cwd=cwd,
        user=image.uid,
        group=image.gid,
        extra_groups=[],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )


def make_volume(image: ImageRoot) -> Path:
    """The image's step that makes the data directory, on this machine (as root, like a build)."""
    volume = last(IMAGE, "VOLUME").value
    (make,) = runs(volume)
    subprocess.run(swap(make.words(), image, last(IMAGE, "USER").value), check=True)
    return image.inside(volume)


async def test_the_data_dir_is_writable_and_the_healthcheck_follows_the_port(
    image_root: ImageRoot,
) -> None:
    data = await asyncio.to_thread(make_volume, image_root)
    assert (data.stat().st_uid, data.stat().st_mode & 0o777) == (image_root.uid, 0o700)
    workdir = image_root.inside(last(IMAGE, "WORKDIR").value)
    workdir.mkdir(parents=True, mode=0o755)  # WORKDIR: made by Docker, owned by root

    port = free_port()
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(image_root.path / "home" / image_root.user),
        **env_of(IMAGE),
        "THREADLINE_DATA_DIR": str(data),
        "THREADLINE_HTTP_PORT": str(port),
        "THREADLINE_PLAYGROUND_TOKEN": TOKEN,  # served on 0.0.0.0, as in the image: needs one
    }
    assert env["THREADLINE_HTTP_HOST"] == "0.0.0.0"
    bot = await as_user(image_root, last(IMAGE, "CMD").words(), env, workdir)
    assert bot.stdout is not None
    try:
        async with asyncio.timeout(WAIT):
            while b"Threadline playground:" not in (line := await bot.stdout.readline()):
                assert line, "the bot exited before serving"
        check = healthcheck_command(last(IMAGE, "HEALTHCHECK"))
        healthy = await as_user(image_root, check, env, workdir)
        elsewhere = await as_user(
            image_root, check, env | {"THREADLINE_HTTP_PORT": str(free_port())}, workdir
        )
        async with asyncio.timeout(WAIT):
            said, _ = await healthy.communicate()
            await elsewhere.communicate()
        assert healthy.returncode == 0, said
        assert f"http://127.0.0.1:{port}/healthz" in said.decode()
        assert elsewhere.returncode == 1  # nothing answers on another port: the check follows it
    finally:
        bot.terminate()
        async with asyncio.timeout(WAIT):
            printed, _ = await bot.communicate()
    assert bot.returncode == 0, printed
    database = data / "threadline.sqlite3"
    assert database.stat().st_uid == image_root.uid and database.stat().st_mode & 0o777 == 0o600
    assert TOKEN.encode() not in printed
