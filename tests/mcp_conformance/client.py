"""The client command the MCP conformance suite runs: ``python client.py URL``, the scenario's
name in ``MCP_CONFORMANCE_SCENARIO``. It becomes ``threadline mcp try URL [TOOL JSON]``, the
tool and arguments being what the scenario's server asks to be called (as every SDK's
conformance client picks them by scenario); the rest is Threadline's own client.

An ``auth/*`` scenario is tried as a configured server instead (``threadline mcp try
conformance --follow-sign-in``): a ``threadline.toml`` is written with its ``[oauth]`` section
from what the suite hands over in ``MCP_CONFORMANCE_CONTEXT`` (a pre-registered client, client
credentials), the client metadata document URL the suite expects, and the secrets in the
environment, as an operator would configure it. For enterprise-managed authorization
(SEP-990) the suite hands over the identity provider's token endpoint and an ID token, not the
authorization server the client is registered with, which an operator would know: it is read
here from the server's protected-resource metadata (the bot itself never takes it from there).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

CALLS = {
    "tools_call": ("add_numbers", '{"a": 5, "b": 3}'),
    "sse-retry": ("test_reconnection", "{}"),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", "{}"),
    "auth/scope-step-up": ("test-tool", "{}"),
}
"""What each scenario calls; the others connect and list the tools."""
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's authorization servers expect."""


def configured(url: str, context: dict[str, object]) -> tuple[str, dict[str, str]]:
    """A ``threadline.toml`` for the scenario's server, and the environment it reads."""
    lines = [
        "[mcp_servers.conformance]",
        f"url = {json.dumps(url)}",
        "",
        "[mcp_servers.conformance.oauth]",
    ]
    env: dict[str, str] = {}
    lines.append(f"client_metadata_url = {json.dumps(CLIENT_METADATA_URL)}")
    if isinstance(client_id := context.get("client_id"), str):
        lines.append(f"client_id = {json.dumps(client_id)}")
    if isinstance(secret := context.get("client_secret"), str):
        lines.append('client_secret = "${CONFORMANCE_CLIENT_SECRET}"')
        env["CONFORMANCE_CLIENT_SECRET"] = secret
    if isinstance(key := context.get("private_key_pem"), str):
        lines.append('private_key = "${CONFORMANCE_PRIVATE_KEY}"')
        env["CONFORMANCE_PRIVATE_KEY"] = key
        algorithm = context.get("signing_algorithm")
        lines.append(f"signing_algorithm = {json.dumps(algorithm or 'ES256')}")
    if str(context.get("name", "")).startswith("auth/client-credentials"):
        lines.append('grant = "client_credentials"')
    if isinstance(id_token := context.get("idp_id_token"), str):
        lines.append('grant = "enterprise"')
        lines.append(f"authorization_server = {json.dumps(authorization_server(url))}")
        lines.append(f"idp_token_endpoint = {json.dumps(context.get('idp_token_endpoint'))}")
        if isinstance(idp_client := context.get("idp_client_id"), str):
            lines.append(f"idp_client_id = {json.dumps(idp_client)}")
        lines.append('id_token = "${CONFORMANCE_ID_TOKEN}"')
        env["CONFORMANCE_ID_TOKEN"] = id_token
    return "\n".join(lines) + "\n", env


def authorization_server(url: str) -> str:
    """The authorization server the MCP server at ``url`` names in its metadata."""
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    with urllib.request.urlopen(where, timeout=10) as answer:
        return str(json.load(answer)["authorization_servers"][0])


def main() -> None:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    call = CALLS.get(scenario, ())
    target = [url]
    env = dict(os.environ)
    if scenario.startswith("auth/"):
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        text, secrets = configured(url, context)
        home = Path(tempfile.mkdtemp(prefix="threadline-conformance-"))
        (home / "threadline.toml").write_text(text)
        env |= secrets | {
            "THREADLINE_CONFIG": str(home / "threadline.toml"),
            "THREADLINE_DATA_DIR": str(home / "data"),
        }
        target = ["--follow-sign-in", "conformance"]
    argv = [sys.executable, "-m", "adapters.cli", "mcp", "try", *target, *call]
    os.execve(sys.executable, argv, env)


if __name__ == "__main__":
    main()
