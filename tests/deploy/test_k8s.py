"""deploy/k8s/ read with a YAML parser: the Deployment's probes, port, user and settings agree
with the image and the runtime, its Secret holds real settings, and the Service reaches the pods
for Slack's HTTP mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from adapters.discord.config import DiscordSettings
from adapters.slack.config import EVENTS_PATH, SlackSettings
from bot.config import Settings, setting_name
from tests.deploy.dockerfile import env_of, last, read

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
IMAGE = read(ROOT / "deploy" / "Dockerfile")
KNOWN = {
    setting_name(m, f) for m in (Settings, SlackSettings, DiscordSettings) for f in m.model_fields
}


def documents() -> dict[str, dict[str, Any]]:
    """Every object in deploy/k8s/, by kind (one of each)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert document["kind"] not in found, document["kind"]
            found[document["kind"]] = document
    assert set(found) == {"Deployment", "Secret", "Service"}
    return found


def container() -> dict[str, Any]:
    (only,) = documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = only
    return found


def test_the_deployment_runs_several_workers_ready_when_readyz_says() -> None:
    deployment = documents()["Deployment"]["spec"]
    assert deployment["replicas"] >= 2
    assert (
        deployment["selector"]["matchLabels"].items()
        <= deployment["template"]["metadata"]["labels"].items()
    )
    worker = container()
    ports = {p["name"]: p["containerPort"] for p in worker["ports"]}
    env = {e["name"]: e["value"] for e in worker["env"]}
    assert str(ports["http"]) == env["THREADLINE_HTTP_PORT"] == last(IMAGE, "EXPOSE").value
    assert worker["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert env["THREADLINE_HTTP_HOST"] == "0.0.0.0"  # reachable by the Service and the probes
    assert env["THREADLINE_PLAYGROUND"] == "false"
    assert set(env) <= KNOWN, set(env) - KNOWN
    mounts = {m["name"]: m["mountPath"] for m in worker["volumeMounts"]}
    assert mounts["data"] == env["THREADLINE_DATA_DIR"] == env_of(IMAGE)["THREADLINE_DATA_DIR"]


def test_the_pods_run_as_the_images_unprivileged_user() -> None:
    pod = documents()["Deployment"]["spec"]["template"]["spec"]["securityContext"]
    useradd = next(i for i in IMAGE if i.keyword == "RUN" and "useradd" in i.value).words()
    assert pod["runAsNonRoot"] is True
    assert str(pod["runAsUser"]) == useradd[useradd.index("--uid") + 1]


def test_the_secret_holds_real_settings_and_the_workers_read_it() -> None:
    secret = documents()["Secret"]
    names = set(secret["stringData"])
    assert names <= KNOWN, names - KNOWN
    assert {"THREADLINE_DATABASE_URL", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"} <= names
    assert (
        "SLACK_APP_TOKEN" not in names
    )  # HTTP mode: Slack reaches the workers through the Service
    assert secret["stringData"]["THREADLINE_DATABASE_URL"].startswith("postgresql://")
    assert {"secretRef": {"name": secret["metadata"]["name"]}} in container()["envFrom"]
    assert not {e["name"] for e in container()["env"]} & names  # secrets only in the Secret


def test_the_service_reaches_every_worker_on_its_http_port() -> None:
    found = documents()
    service = found["Service"]["spec"]
    labels = found["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()
    (port,) = service["ports"]
    assert port["targetPort"] in {p["name"] for p in container()["ports"]}
    assert EVENTS_PATH in (K8S / "service.yaml").read_text(encoding="utf-8")
