"""``[mcp_servers.NAME]`` in threadline.toml: the two shapes, ``${VAR}`` from the environment,
the stdio server's minimal environment, and each configuration mistake named."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import load_settings
from bot.errors import ConfigError
from bot.infra.logs import RedactSecrets, secret_values
from bot.mcp.endpoint import HttpEndpoint, StdioEndpoint, endpoint

TOML = """
[mcp_servers.tickets]
command = "python"
args = ["tickets_server.py"]
env = { TICKETS_LOG = "/var/log/tickets.jsonl", TICKETS_KEY = "${TICKETS_KEY}" }
timeout_s = 5

[mcp_servers.docs]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
max_output_chars = 500

[mcp_servers.off]
command = "nothing"
env = { X = "${NOT_SET_ANYWHERE}" }
enabled = false

[channels."slack:T1:C1"]
mcp_servers = ["docs"]
"""


def settings_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "threadline.toml"
    path.write_text(text)
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    return load_settings(data_dir=tmp_path)


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "docs-t0ken-value")
    monkeypatch.setenv("TICKETS_KEY", "tickets-k3y-value")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-servers")


def test_both_shapes_are_read_with_variables_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from(tmp_path, monkeypatch, TOML)
    tickets = endpoint(
        "tickets",
        settings.mcp_servers["tickets"],
        {"PATH": "/bin", "TICKETS_KEY": "k", "OPENAI_API_KEY": "sk"},
    )
    docs = endpoint("docs", settings.mcp_servers["docs"], {"DOCS_TOKEN": "t"})
    assert isinstance(tickets, StdioEndpoint) and isinstance(docs, HttpEndpoint)
    assert tickets.env == {
        "PATH": "/bin",
        "TICKETS_LOG": "/var/log/tickets.jsonl",
        "TICKETS_KEY": "k",
    }
    assert tickets.args == ["tickets_server.py"] and settings.mcp_servers["tickets"].timeout_s == 5
    assert docs.headers == {"Authorization": "Bearer t"}
    assert settings.mcp_servers["docs"].max_output_chars == 500
    assert settings.mcp_servers["docs"].timeout_s == 60
    assert not settings.mcp_servers["off"].enabled
    channel = settings.channel("slack:T1:C1:1.2")
    assert channel is not None and channel.mcp_servers == ["docs"]


def test_values_read_from_the_environment_never_reach_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_from(tmp_path, monkeypatch, TOML)
    redact = RedactSecrets(secret_values(settings))
    assert (
        redact.redact("sent Bearer docs-t0ken-value and tickets-k3y-value")
        == "sent Bearer [redacted] and [redacted]"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[mcp_servers.docs]\nurl = "https://x/mcp"\nheaders = { A = "${NO_SUCH_TOKEN}" }\n',
            "mcp_servers.docs: the environment variable NO_SUCH_TOKEN is not set",
        ),
        (
            '[mcp_servers."two words"]\ncommand = "x"\n',
            'mcp_servers."two words": a server name is 1-60 letters',
        ),
        ('[mcp_servers.a__b]\ncommand = "x"\n', "no '__'"),
        (
            '[mcp_servers.both]\ncommand = "x"\nurl = "https://x/mcp"\n',
            "mcp_servers.both: give either command",
        ),
        ("[mcp_servers.neither]\ntimeout_s = 3\n", "mcp_servers.neither: give either command"),
        (
            '[mcp_servers.h]\ncommand = "x"\nheaders = { A = "b" }\n',
            "mcp_servers.h: headers go with url",
        ),
        (
            '[mcp_servers.u]\nurl = "ftp://x"\n',
            "mcp_servers.u: url must start with http:// or https://",
        ),
        ('[mcp_servers.t]\ncommand = "x"\ntimeout_s = 0\n', "greater than 0"),
        (
            '[channels."slack:T1"]\nmcp_servers = ["ghost"]\n',
            "channels.\"slack:T1\".mcp_servers: no server named 'ghost'",
        ),
    ],
)
def test_mistakes_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from(tmp_path, monkeypatch, text)
    assert message in str(caught.value)
