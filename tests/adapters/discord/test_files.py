"""Files in and out of a Discord thread, with the real discord.py against the fake Discord:
attachments downloaded from their CDN URLs into the thread's workspace and named to the model,
what cannot be read said in the thread, and ``send_file`` posting a workspace file as an
attachment (a multipart message create)."""

from __future__ import annotations

from bot.llm.messages import ToolResult, UserMessage
from tests.adapters.discord.conftest import Discord
from tests.fakes.discord.cdn import MAX_UPLOAD
from tests.fakes.documents import CSV, PNG, text_pdf
from tests.fakes.recorder import Recorder
from tests.fakes.scripted_model import ScriptedModel, call, step, text


async def test_attachments_reach_the_model_and_the_workspace(discord_world: Discord) -> None:
    d = discord_world
    model = ScriptedModel([text("Got them.")])
    await d.start(model=model, vision="off", file_max_bytes=64 * 1024)
    files = {
        "../../etc/cities.csv": CSV,
        "notes\x00.pdf": text_pdf("Meeting moved to Friday"),
        "cat.png": PNG,
        "huge.bin": bytes(100 * 1024),
    }
    message = d.fake.say(d.channel, d.ada, d.mention(), files=files)
    thread = await d.thread_of(message)
    await d.wait_for(lambda: any("Got them." in s for s in d.fake.world.shown(thread.id)))
    await d.idle()

    asked = next(m for m in model.requests[0].messages if isinstance(m, UserMessage))
    assert asked.text.startswith("Shared 4 files")
    assert "- cities.csv (59 bytes, text, 4 lines)" in asked.text
    assert "- notes.pdf (" in asked.text and "Meeting moved to Friday" in asked.text
    assert "cat.png (" in asked.text and "cannot see images" in asked.text
    assert "huge.bin: not downloaded (100.0 KB, larger than the 64.0 KB cap)" in asked.text
    (shown,) = d.fake.world.shown(thread.id)
    assert "About the files: " in shown and "huge.bin: not read" in shown
    (workspace,) = (d.data_dir / "workspaces").iterdir()
    assert sorted(p.name for p in workspace.iterdir()) == [
        "cat.png",
        "cities.csv",
        "notes.pdf",
        "notes.pdf.txt",
    ]
    assert len(set(d.fake.cdn.served)) == 3  # huge.bin was never downloaded


async def test_send_file_posts_an_attachment_and_a_refused_upload_is_a_tool_error(
    discord_world: Discord,
) -> None:
    d = discord_world
    model = ScriptedModel(
        [
            step(call("write_file", {"path": "plot.svg", "content": "<svg/>"})),
            step(call("send_file", {"path": "plot.svg"})),
            step(call("run_nothing", {})),
            text("Sent."),
        ]
    )
    await d.start(model=model, file_max_bytes=2 * MAX_UPLOAD)
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("draw it")))
    await d.wait_for(lambda: any("Sent." in s for s in d.fake.world.shown(thread.id)))
    await d.idle()
    posted = [m for m in d.fake.world.in_channel(thread.id) if m.attachments]
    (attachment,) = posted[0].attachments
    assert attachment["filename"] == "plot.svg"
    assert d.fake.cdn.data_of(attachment) == b"<svg/>"
    result = next(
        m
        for m in model.requests[-1].messages
        if isinstance(m, ToolResult) and m.name == "send_file"
    )
    assert result.content == "Posted plot.svg (6 bytes) in the thread."

    assert d.core is not None
    (workspace,) = (d.data_dir / "workspaces").iterdir()
    (workspace / "big.bin").write_bytes(bytes(MAX_UPLOAD + 1))
    model.steps.extend([step(call("send_file", {"path": "big.bin"})), text("Tried.")])
    d.fake.say(thread, d.ada, "send the big one")
    await d.wait_for(lambda: any("Tried." in s for s in d.fake.world.shown(thread.id)))
    await d.idle()
    result = [m for m in model.requests[-1].messages if isinstance(m, ToolResult)][-1]
    assert result.is_error and "the platform refused the file" in result.content
    assert "40005" in result.content


async def test_an_attachment_off_discords_cdn_is_refused_and_named(
    discord_world: Discord,
) -> None:
    d = discord_world
    model = ScriptedModel([text("Read what I could.")])
    await d.start(model=model)
    async with Recorder() as elsewhere:
        planted = {
            "id": "991",
            "filename": "planted.txt",
            "size": 4,
            "url": f"{elsewhere.base_url}/attachments/1/991/planted.txt?hm=sig",
            "proxy_url": f"{elsewhere.base_url}/attachments/1/991/planted.txt?hm=sig",
            "content_type": "text/plain",
        }
        message = d.fake.say(
            d.channel,
            d.ada,
            d.mention("read these"),
            files={"good.txt": b"kept"},
            attachments=[planted],
        )
        thread = await d.thread_of(message)
        await d.wait_for(
            lambda: any("Read what I could." in s for s in d.fake.world.shown(thread.id))
        )
        await d.idle()
        assert elsewhere.seen == []
    asked = next(m for m in model.requests[0].messages if isinstance(m, UserMessage))
    where = f"127.0.0.1:{elsewhere.port}"
    assert f"planted.txt: not downloaded (its link leads to {where}, not to Discord's CDN" in (
        asked.text
    )
    assert "- good.txt (4 bytes, text" in asked.text
    (shown,) = d.fake.world.shown(thread.id)
    assert "About the files: planted.txt: not read (its link leads to" in shown
