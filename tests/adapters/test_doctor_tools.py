"""``threadline doctor`` on the tools with settings of their own: fetch_url, web_search, the
custom tools and the skills."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from bot.tools import bwrap
from tests.adapters.test_cli import threadline
from tests.bot.tools.test_skills import write_skill


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_doctor_describes_the_web_tools_custom_tools_and_skills(tmp_path: Path) -> None:
    port = closed_port()
    (tmp_path / "threadline.toml").write_text(
        '[tools.fetch_url]\nallow_domains = ["docs.python.org"]\n'
        f'[tools.web_search]\nsearxng_url = "http://127.0.0.1:{port}"\n'
        '[custom_tools.weather]\ndescription = "The weather."\ncommand = ["curl", "-s", "wttr.in/{city}"]\n'
        'parameters.city = { description = "A city." }\nnetwork = true\n'
        '[custom_tools.tickets]\ndescription = "A ticket."\n'
        'http = { url = "https://tickets.example/api/{id}", headers = { Authorization = "Bearer ${TICKETS_TOKEN}" } }\n'
        'parameters.id = { type = "integer" }\n'
    )
    skills = tmp_path / ".threadline" / "skills"
    write_skill(skills, "release", "Cut it.")
    write_skill(skills, "long", "x" * 5000)
    write_skill(skills, "odd", "x", name="even")
    os.link(write_skill(skills, "twin", "x"), tmp_path / "twin.md")
    out = threadline("doctor", cwd=tmp_path, env={"TICKETS_TOKEN": "t0ken-value-42"})
    lines = out.stdout.splitlines()
    assert (
        "[--  ] fetch_url: public addresses only; reads docs.python.org without asking, other domains ask first"
        in lines
    )
    search = next(line for line in lines if "web_search" in line)
    assert search.startswith(
        f"[FAIL] web_search: SearXNG at http://127.0.0.1:{port} cannot be reached"
    )
    assert "[ok  ] custom tool tickets: GET https://tickets.example/api/{id}" in lines
    if bwrap.probe().usable:
        assert (
            "[ok  ] custom tool weather: runs curl -s 'wttr.in/{city}' in the sandbox with network"
            in lines
        )
    assert f"[--  ] skills in {skills.relative_to(tmp_path)}: long, release" in lines
    assert "[--  ] skill long: 5,000 bytes; only its first 4,096 are loaded" in lines
    assert (
        "[FAIL] skill odd is not offered: its front matter names it 'even', not 'odd' as its folder"
        in lines
    )
    assert (
        "[FAIL] skill twin is not offered: the skill twin's SKILL.md has 2 hard links; "
        "hard-linked files are refused (a link can lead outside the skills folder)" in lines
    )
    assert any(line.startswith("[--  ] policy: fetch_url: asks unless") for line in lines)
    assert "t0ken-value-42" not in out.stdout + out.stderr and out.returncode == 1
