"""The real program with an MCP server whose tool returns files: ``threadline run`` starts the
server (built with the ``mcp`` SDK), a fake OpenAI server scripts the model's call, and the
playground shows what was posted: the CSV report and the recording for people are in the thread
(downloadable), the model read the report's start, and the report is in the thread's workspace."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_process_restart import browser, free_port, open_page, threadline, until_event
from tests.fakes.mcp_asking_server import REPORT_CSV, WAV, stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply


async def test_files_an_mcp_tool_returns_are_posted_and_read(tmp_path: Path) -> None:
    command = stdio_command()
    (tmp_path / "threadline.toml").write_text(
        "[mcp_servers.asking]\n"
        f"command = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\n"
        "timeout_s = 20\n"
        '[tools."asking__report"]\n'
        'approval = "never"\n'
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as model, browser() as http:
        model.push(Reply(calls=[FakeCall("asking__report", {})]), Reply("South sold most."))
        settings = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **settings):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                async with http.post(
                    f"{base}/api/messages",
                    json={"text": "The report?", "event_id": "event-report-1", "user_name": "Ada"},
                ) as resp:
                    thread_id = (await resp.json())["thread_id"]
                await until_event(ws, lambda e: "South sold most." in json.dumps(e))
            async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                messages = (await resp.json())["messages"]
            files = {f["name"]: f["id"] for m in messages for f in m["files"]}
            assert sorted(files) == ["asking__report-file-2.wav", "q3_totals.csv"]
            for name, data in (("q3_totals.csv", REPORT_CSV), ("asking__report-file-2.wav", WAV)):
                async with http.get(f"{base}/api/files/{thread_id}/{files[name]}") as download:
                    assert download.status == 200 and await download.read() == data
    result = next(m for m in model.requests[1].messages if m["role"] == "tool")["content"]
    assert "[text/csv file q3_totals.csv: posted in the thread; kept in your workspace" in result
    assert "north,12" in result and "RIFF" not in result
    saved = list((tmp_path / "data" / "workspaces").glob("*/q3_totals.csv"))
    assert [p.read_bytes() for p in saved] == [REPORT_CSV]
