"""The real program with feedback on: a playground answer carries 👍 / 👎, a 👎 and its "what
went wrong?" line are kept, ``/metrics`` counts it, and ``threadline feedback`` prints it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.adapters.test_cli import threadline as threadline_command
from tests.e2e.test_process_restart import browser, free_port, open_page, threadline, until_event


async def test_a_thumbs_down_and_its_line_are_kept_counted_and_listed(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with browser() as http, threadline(tmp_path, port, THREADLINE_FEEDBACK="on"):
        await open_page(http, base)
        async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
            said = {"text": "hello there", "event_id": "event-feedback-01", "user_name": "Ada"}
            async with http.post(f"{base}/api/messages", json=said) as resp:
                assert resp.status == 202, await resp.text()
                thread_id = (await resp.json())["thread_id"]
            shown = await until_event(
                ws, lambda e: e.get("type") == "message" and len(e["message"]["buttons"]) == 2
            )
        labels = {b["label"]: b["action_id"] for b in shown["message"]["buttons"]}
        assert set(labels) == {"👍", "👎"}
        click = {"thread_id": thread_id, "action_id": labels["👎"], "user_name": "Ada"}
        async with http.post(f"{base}/api/actions", json=click) as resp:
            form = (await resp.json())["ask"]
        line = {"form_id": form, "text": "It only said hello back", "user_name": "Ada"}
        async with http.post(f"{base}/api/explain", json=line) as resp:
            assert (await resp.json())["note"] == "Thanks, noted."
        async with http.get(f"{base}/metrics") as resp:
            metrics = await resp.text()
        assert 'threadline_feedback_total{value="down"} 1.0' in metrics

    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    listed = threadline_command("feedback", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (given,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (given["user"], given["value"], given["note"]) == (
        "Ada",
        "down",
        "It only said hello back",
    )
    assert given["thread"] == f"playground:{thread_id}"
