"""The real program on the fake Slack and the fake OpenAI server: a shared CSV and an image
reach a vision model as a preview and an image part, the CSV lands in the thread's workspace,
and a file over the cap is named in the reply while the message is still answered."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.documents import CSV, PNG
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack

WAIT = 30.0


async def test_shared_files_reach_the_model_and_the_workspace(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(Reply("Paris is the largest."))
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "THREADLINE_MODEL": "gpt-4o",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
                "THREADLINE_FILE_MAX_BYTES": "4096",
            }
            async with threadline(tmp_path, free_port(), **settings):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                files = [
                    slack.files.share("cities.csv", CSV, "text/csv"),
                    slack.files.share("map.png", PNG, "image/png"),
                    slack.files.share("dump.bin", bytes(8192), "application/octet-stream"),
                ]
                root = await slack.say(
                    "UADA", "CGENERAL", f"{MENTION} which is largest?", files=files
                )

                def answered() -> bool:  # and the run over: its Stop message is gone
                    replies = slack.replies("CGENERAL", root.ts)
                    return len(replies) == 1 and "largest." in replies[0].shown

                await slack.wait_for(answered, WAIT)
                (reply,) = slack.replies("CGENERAL", root.ts)
        assert "dump.bin: not read (8.0 KB, larger than the 4.0 KB cap)" in reply.shown
        (request,) = model.requests
        text, image = request.messages[-1]["content"]
        assert text["text"].startswith("[Ada]: which is largest?\n\nShared 3 files")
        assert "Paris,2102650" in text["text"]
        assert image["image_url"]["url"].startswith("data:image/png;base64,")
        saved = list((tmp_path / "data" / "workspaces").glob("*/cities.csv"))
        assert [p.read_bytes() for p in saved] == [CSV]
    finally:
        await slack.stop()
