"""deploy/compose.yaml read with a YAML parser: what it names exists and agrees with the image,
the settings and the README (no Docker daemon here, so nothing is built)."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import yaml

from adapters.discord.config import DiscordSettings
from adapters.slack.config import SlackSettings
from bot.config import Settings, setting_name
from tests.deploy.dockerfile import Instruction, env_of, last, read

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def service() -> dict[str, Any]:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    services: dict[str, Any] = compose["services"]
    assert list(services) == ["threadline"]
    named: dict[str, Any] = services["threadline"]
    for volume in named["volumes"]:
        source = volume.split(":")[0]
        assert source.startswith(".") or source in compose["volumes"], source
    return named


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ``${NAME}`` and ``${NAME:-default}``."""
    return _VARIABLE.sub(lambda m: env.get(m.group(1)) or m.group(2) or "", text)


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
    assert named and set(named) <= known, set(named) - known
    assert "THREADLINE_PLAYGROUND_TOKEN" in named


def test_the_port_follows_the_port_setting() -> None:
    image = dockerfile()
    default = str(Settings.model_fields["http_port"].default)
    assert env_of(image)["THREADLINE_HTTP_PORT"] == default == last(image, "EXPOSE").value
    (mapping,) = service()["ports"]
    listening = service()["environment"]["THREADLINE_HTTP_PORT"]
    for env, port in (({}, default), ({"THREADLINE_HTTP_PORT": "9100"}, "9100")):
        assert interpolate(mapping, env) == f"127.0.0.1:{port}:{port}"  # this machine only
        assert interpolate(listening, env) == port  # where the bot listens in the container


def test_the_volumes_are_where_the_image_expects_them() -> None:
    image = dockerfile()
    mounts = dict(v.split(":")[:2] for v in service()["volumes"])
    assert mounts["threadline-data"] == env_of(image)["THREADLINE_DATA_DIR"] == last(image, "VOLUME").value
    config = [v for v in service()["volumes"] if v.startswith("./config:")]
    assert config == [f"./config:{last(image, 'WORKDIR').value}:ro"]  # threadline.toml is read there
    example = DEPLOY / "config" / "threadline.toml.example"
    tomllib.loads(example.read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "deploy/config/threadline.toml" in readme
