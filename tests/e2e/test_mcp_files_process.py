"""The real program with an MCP server whose tool returns files: ``threadline run`` starts the
server (built with the ``mcp`` SDK), a fake OpenAI server scripts the model's call, and the
playground shows what was posted: the CSV report and the recording for people are in the thread
(downloadable), the model read the report's start, and the report is in the thread's workspace."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.playground import mcp_server_config, playground
from tests.fakes.mcp_asking_server import REPORT_CSV, WAV, stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply


async def test_files_an_mcp_tool_returns_are_posted_and_read(tmp_path: Path) -> None:
    mcp_server_config(tmp_path, "asking", stdio_command(), never_ask=["asking__report"])
    async with FakeOpenAI() as model:
        model.push(Reply(calls=[FakeCall("asking__report", {})]), Reply("South sold most."))
        async with playground(tmp_path, model) as play:
            thread_id = await play.say("The report?", "event-report-1", {"user_name": "Ada"})
            await play.until("South sold most.")
            messages = await play.messages(thread_id)
            files = {f["name"]: f["id"] for m in messages for f in m["files"]}
            assert sorted(files) == ["asking__report-file-2.wav", "q3_totals.csv"]
            for name, data in (("q3_totals.csv", REPORT_CSV), ("asking__report-file-2.wav", WAV)):
                async with play.http.get(f"{play.base}/api/files/{thread_id}/{files[name]}") as got:
                    assert got.status == 200 and await got.read() == data
    result = next(m for m in model.requests[1].messages if m["role"] == "tool")["content"]
    assert "[text/csv file q3_totals.csv: posted in the thread; kept in your workspace" in result
    assert "north,12" in result and "RIFF" not in result
    saved = list((tmp_path / "data" / "workspaces").glob("*/q3_totals.csv"))
    assert [p.read_bytes() for p in saved] == [REPORT_CSV]
