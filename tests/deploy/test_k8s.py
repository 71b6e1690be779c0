"""deploy/k8s/ read with a YAML parser: the Deployment's probes, port, user and settings agree
with the image and the runtime, its hardening holds, the example Secret holds real settings and
stays out of what ``kubectl apply -f deploy/k8s/`` applies, the Service reaches the pods for
Slack's HTTP mode; and every manifest is valid against the Kubernetes schemas that
kubernetes-validate ships (strict: no unknown fields)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from adapters.discord.config import DiscordSettings
from adapters.slack.config import EVENTS_PATH, SlackSettings
from bot.config import Settings, setting_name
from tests.deploy.dockerfile import env_of, last, read

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
SECRET_EXAMPLE = K8S / "secret.yaml.example"
KUBECTL_EXTENSIONS = (".yaml", ".yml", ".json")
"""What ``kubectl apply -f DIR`` (and ``-R``) reads in a folder; other files are left alone."""
IMAGE = read(ROOT / "deploy" / "Dockerfile")
KNOWN = {
    setting_name(m, f) for m in (Settings, SlackSettings, DiscordSettings) for f in m.model_fields
}


def applied() -> list[Path]:
    """The files ``kubectl apply -R -f deploy/k8s/`` would apply."""
    return sorted(p for p in K8S.rglob("*") if p.is_file() and p.suffix in KUBECTL_EXTENSIONS)


def documents() -> dict[str, dict[str, Any]]:
    """Every object that applying deploy/k8s/ creates, by kind (one of each)."""
    found: dict[str, dict[str, Any]] = {}
    for path in applied():
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert document["kind"] not in found, document["kind"]
            found[document["kind"]] = document
    assert set(found) == {"Deployment", "Service", "PodDisruptionBudget"}
    return found


def secret_example() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(SECRET_EXAMPLE.read_text(encoding="utf-8"))
    return found


def pod() -> dict[str, Any]:
    found: dict[str, Any] = documents()["Deployment"]["spec"]["template"]["spec"]
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
    secret = secret_example()
    assert secret["kind"] == "Secret"
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


def test_applying_the_folder_never_overwrites_a_real_secret() -> None:
    assert SECRET_EXAMPLE.suffix not in KUBECTL_EXTENSIONS
    assert "Secret" not in documents()
    docs = (ROOT / "docs" / "operations" / "kubernetes.md").read_text(encoding="utf-8")
    assert "deploy/k8s/secret.yaml.example" in docs
    assert "kubectl create secret generic threadline --from-env-file" in docs
    assert "deploy/k8s/secret.yaml`" not in docs


def test_the_container_is_locked_down() -> None:
    spec = pod()
    assert spec["automountServiceAccountToken"] is False
    context = container()["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["readOnlyRootFilesystem"] is True
    assert "privileged" not in context


def test_a_read_only_root_keeps_a_writable_tmp_and_data_dir() -> None:
    volumes = {v["name"]: v for v in pod()["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container()["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert mounts[env_of(IMAGE)["THREADLINE_DATA_DIR"]] in volumes
    assert not any(m.get("readOnly") for m in container()["volumeMounts"])


def test_the_sandbox_keeps_its_namespaces_and_the_manifest_says_why() -> None:
    """bubblewrap needs user namespaces, which RuntimeDefault seccomp and AppArmor refuse: the
    container opts out of both (and only of those), and the manifest and docs say what it
    allows and how to turn commands off instead."""
    context = container()["securityContext"]
    assert context["seccompProfile"] == {"type": "Unconfined"}
    assert context["appArmorProfile"] == {"type": "Unconfined"}
    pod_context = pod()["securityContext"]
    assert pod_context.get("seccompProfile", {}).get("type") != "RuntimeDefault"  # no override
    text = (K8S / "deployment.yaml").read_text(encoding="utf-8")
    assert "user namespaces" in text and "THREADLINE_WORKSPACE_TOOLS=false" in text
    docs = (ROOT / "docs" / "operations" / "kubernetes.md").read_text(encoding="utf-8")
    assert "Unconfined" in docs and "THREADLINE_WORKSPACE_TOOLS=false" in docs


def test_a_slow_start_is_not_killed_by_the_liveness_probe() -> None:
    worker = container()
    startup = worker["startupProbe"]
    assert startup["httpGet"] == {"path": "/healthz", "port": "http"}
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 60
    assert "initialDelaySeconds" not in worker["livenessProbe"]  # the startup probe covers it


def test_a_drain_keeps_one_of_the_two_workers() -> None:
    found = documents()
    budget = found["PodDisruptionBudget"]["spec"]
    deployment = found["Deployment"]["spec"]
    assert deployment["replicas"] == 2
    assert budget["minAvailable"] == 1 and "maxUnavailable" not in budget
    assert budget["selector"]["matchLabels"] == deployment["selector"]["matchLabels"]


def validator() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        pytest.fail(
            "kubernetes-validate is missing: pip install -e '.[test]' (it ships the schemas; "
            "nothing is downloaded)"
        )
    return kubernetes_validate


@pytest.mark.parametrize("path", [*applied(), SECRET_EXAMPLE], ids=lambda p: p.name)
def test_the_manifests_are_valid_kubernetes(path: Path) -> None:
    kubernetes_validate = validator()
    for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        try:
            kubernetes_validate.validate(
                document, kubernetes_validate.latest_version(), strict=True
            )
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name}: {exc.path}: {exc.message}")
