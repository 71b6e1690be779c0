"""The real program's playground with a model on the fake OpenAI server: a CSV uploaded with a
message reaches the model as a preview and lands in the thread's workspace; the model's
``send_file`` shows in the thread as a link that downloads the same bytes, also after a
restart."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.e2e.test_process_restart import browser, free_port, open_page, threadline, until_event
from tests.fakes.documents import CSV
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply


async def test_an_uploaded_csv_is_previewed_and_send_file_downloads_it(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as model:
        model.push(
            Reply(calls=[FakeCall("send_file", {"path": "cities.csv"})]),
            Reply("Paris is the largest; the file is back in the thread."),
        )
        settings = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
        async with browser() as http:
            async with threadline(tmp_path, port, **settings):
                await open_page(http, base)
                async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                    form = aiohttp.FormData()
                    form.add_field("text", "Which city is largest?")
                    form.add_field("event_id", "event-files-0001")
                    form.add_field("user_name", "Ada")
                    form.add_field("file", CSV, filename="cities.csv", content_type="text/csv")
                    async with http.post(f"{base}/api/messages", data=form) as resp:
                        assert resp.status == 202, await resp.text()
                        thread_id = (await resp.json())["thread_id"]
                    sent = await until_event(
                        ws,
                        lambda e: (
                            e.get("type") == "message"
                            and bool(e["message"]["files"])
                            and e["message"]["bot"]
                        ),
                    )
                    await until_event(
                        ws,
                        lambda e: e.get("type") == "message" and "largest;" in e["message"]["text"],
                    )
                (file,) = sent["message"]["files"]
                link = f"{base}/api/files/{thread_id}/{file['id']}"
                async with http.get(link) as download:
                    assert download.status == 200
                    assert await download.read() == CSV
                    assert (
                        download.headers["Content-Disposition"]
                        == 'attachment; filename="cities.csv"'
                    )
                    assert download.headers["Content-Type"] == "text/csv; charset=utf-8"

            async with threadline(tmp_path, port, **settings):  # a restart keeps it shown
                async with http.get(link) as download:
                    assert download.status == 200 and await download.read() == CSV
                async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                    messages = (await resp.json())["messages"]
                assert [f["name"] for m in messages for f in m["files"]] == ["cities.csv"] * 2

    first = model.requests[0].messages[-1]["content"]
    assert first.startswith("[Ada]: Which city is largest?\n\nShared 1 file")
    assert "Paris,2102650" in first
    result = next(m for m in model.requests[1].messages if m["role"] == "tool")
    assert "Posted cities.csv (59 bytes) in the thread." in result["content"]
    saved = list((tmp_path / "data" / "workspaces").glob("*/cities.csv"))
    assert [p.read_bytes() for p in saved] == [CSV]
