"""deploy/compose.yaml read with a YAML parser: what it names exists and agrees with the image,
the settings and the README (no Docker daemon here, so nothing is built; tests/e2e/
test_compose_workers.py starts what it describes)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from adapters.discord.config import DiscordSettings
from adapters.slack.config import SlackSettings
from bot.config import Settings, setting_name
from tests.deploy.dockerfile import Instruction, env_of, last, read

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
_VARIABLE = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")
COMPOSE_VARIABLES = {"POSTGRES_PASSWORD"}
"""Variables the compose file reads from ``deploy/.env`` for itself (not Threadline settings)."""


def compose() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return found


def workers() -> dict[str, dict[str, Any]]:
    """The services built from the image: the Threadline workers."""
    described = compose()
    found = {name: s for name, s in described["services"].items() if "build" in s}
    for worker in found.values():
        for volume in worker["volumes"]:
            source = volume.split(":")[0]
            assert source.startswith(".") or source in described["volumes"], source
    return found


def service() -> dict[str, Any]:
    """The first worker (every worker is built and configured alike, but for its shard)."""
    return next(iter(workers().values()))


def database() -> tuple[str, dict[str, Any]]:
    """The PostgreSQL service: its name and description."""
    (found,) = [
        (n, s)
        for n, s in compose()["services"].items()
        if str(s.get("image", "")).startswith("postgres:")
    ]
    return found


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?error}`` (which must be set)."""

    def value(m: re.Match[str]) -> str:
        name, kind, rest = m.groups()
        if kind == "?":
            assert env.get(name), f"compose refuses to start without {name}: {rest}"
        return env.get(name) or (rest if kind == "-" else "")

    return _VARIABLE.sub(value, text)


def dockerfile() -> list[Instruction]:
    build = service()["build"]
    return read((DEPLOY / build["context"]).resolve() / build["dockerfile"])


def test_the_build_context_and_the_dockerfile_exist() -> None:
    build = service()["build"]
    context = (DEPLOY / build["context"]).resolve()
    assert context == ROOT and (context / "pyproject.toml").is_file()
    assert (context / build["dockerfile"]).is_file()
    for copy in (i for i in dockerfile() if i.keyword == "COPY"):
        *sources, _ = copy.words()
        assert all((context / source).exists() for source in sources), copy


def test_the_env_file_is_the_documented_copy_of_the_example() -> None:
    env_file = service()["env_file"]
    assert (DEPLOY / env_file).resolve() == DEPLOY / ".env"
    assert (DEPLOY / ".env.example").is_file()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "cp deploy/.env.example deploy/.env" in readme
    ignored = subprocess.run(["git", "check-ignore", "-q", "deploy/.env"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "deploy/.env holds secrets and must not be committed"


def test_every_setting_in_the_example_is_a_real_setting() -> None:
    known = {
        setting_name(model, field)
        for model in (Settings, SlackSettings, DiscordSettings)
        for field in model.model_fields
    }
    named = re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (DEPLOY / ".env.example").read_text(), re.M)
    assert named and set(named) <= known | COMPOSE_VARIABLES, set(named) - known
    assert set(named) >= COMPOSE_VARIABLES
    assert "THREADLINE_PLAYGROUND_TOKEN" in named


def test_each_worker_listens_where_the_image_says_and_is_published_on_this_machine_only() -> None:
    image = dockerfile()
    default = str(Settings.model_fields["http_port"].default)
    assert env_of(image)["THREADLINE_HTTP_PORT"] == default == last(image, "EXPOSE").value
    published = []
    for worker in workers().values():
        assert worker["environment"]["THREADLINE_HTTP_PORT"] == default  # the healthcheck's port
        (mapping,) = worker["ports"]
        host, outside, inside = mapping.split(":")
        assert (host, inside) == ("127.0.0.1", default)  # this machine only
        published.append(outside)
    assert len(set(published)) == len(published) == 2


def test_the_workers_use_the_compose_database_once_it_is_healthy() -> None:
    name, db = database()
    env = {"POSTGRES_PASSWORD": "pw-0123"}
    for worker in workers().values():
        url = urlsplit(interpolate(worker["environment"]["THREADLINE_DATABASE_URL"], env))
        assert (url.scheme, url.hostname, url.port) == ("postgresql", name, 5432)
        assert url.username == db["environment"]["POSTGRES_USER"]
        assert url.password == interpolate(db["environment"]["POSTGRES_PASSWORD"], env) == "pw-0123"
        assert url.path == f"/{db['environment']['POSTGRES_DB']}"
        assert worker["depends_on"] == {name: {"condition": "service_healthy"}}
        assert (
            worker["environment"]["THREADLINE_PLAYGROUND"] == "false"
        )  # one playground per worker makes no sense
    assert "pg_isready" in db["healthcheck"]["test"]
    assert any(
        v.endswith(":/var/lib/postgresql/data") for v in db["volumes"]
    )  # the data outlives the container
    assert "ports" not in db  # reachable by the workers only


def test_the_workers_split_the_discord_shards() -> None:
    shards = []
    for worker in workers().values():
        settings = DiscordSettings(
            _env_file=None,
            discord_token="x",
            discord_shard_count=worker["environment"]["THREADLINE_DISCORD_SHARD_COUNT"],
            discord_shard_ids=worker["environment"]["THREADLINE_DISCORD_SHARD_IDS"],
        )
        found = settings.shards()
        assert found is not None
        shards.append(found)
    assert sorted(i for s in shards for i in s.ids) == list(range(shards[0].count))


def test_the_volumes_are_where_the_image_expects_them() -> None:
    image = dockerfile()
    mounts = dict(v.split(":")[:2] for v in service()["volumes"])
    assert (
        mounts["threadline-data"]
        == env_of(image)["THREADLINE_DATA_DIR"]
        == last(image, "VOLUME").value
    )
    assert all(
        w["volumes"] == service()["volumes"] for w in workers().values()
    )  # one shared data volume
    config = [v for v in service()["volumes"] if v.startswith("./config:")]
    assert config == [
        f"./config:{last(image, 'WORKDIR').value}:ro"
    ]  # threadline.toml is read there
    example = DEPLOY / "config" / "threadline.toml.example"
    tomllib.loads(example.read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "deploy/config/threadline.toml" in readme


def test_the_workers_may_make_the_sandboxs_namespaces_and_the_file_says_why() -> None:
    """bubblewrap needs user namespaces, which Docker's default seccomp and AppArmor profiles
    refuse: without these the workers would start without run_command."""
    for worker in workers().values():
        assert set(worker["security_opt"]) == {"seccomp=unconfined", "apparmor=unconfined"}
        assert not worker.get("privileged") and "cap_add" not in worker
    lines = (DEPLOY / "compose.yaml").read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "security_opt:")
    above = []
    while lines[at - 1 - len(above)].strip().startswith("#"):
        above.append(lines[at - 1 - len(above)])
    comment = " ".join(above)
    assert "bubblewrap" in comment and "user" in comment and "namespaces" in comment
    assert "allow" in comment  # what it allows


def test_the_compose_file_is_valid_against_the_compose_specification() -> None:
    """check-jsonschema's bundled copy of the Compose specification's schema (nothing is
    downloaded)."""
    try:
        import check_jsonschema  # noqa: F401
    except ImportError:
        pytest.fail("check-jsonschema is missing: pip install -e '.[test]'")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(DEPLOY / "compose.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
