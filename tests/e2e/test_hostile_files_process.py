"""The real ``threadline run`` with files that misbehave.

On the fake Slack: killed with SIGKILL while a shared file downloads, after Slack had its
acknowledgement, the program answers the message once it is back (the message was stored
before the acknowledgement; the file is fetched again), and the thread's follow-ups are
answered, and a reply that reaches it before its thread's mention is answered after it. On the
fake Discord: a download that sends headers and then nothing is stopped with
a note in the thread, a PDF of 100,000 pages is read in part and says so, and gateway frames
that do not decode are skipped on the same connection."""

from __future__ import annotations

import signal
from pathlib import Path

from bot.infra.clock import SystemClock
from tests.adapters.discord.test_process import threadline as discord_threadline
from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.discord import FakeDiscord
from tests.fakes.documents import many_pages_pdf
from tests.fakes.faulty_body import Fault
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack, payloads

WAIT = 30.0
NOTES = b"a line of the notes\n" * 100_000  # 2 MB


async def test_a_kill_during_a_download_loses_nothing(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(Reply("Read your notes."), Reply("Yes, that too."))
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "THREADLINE_MODEL": "gpt-4o",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
            }
            port = free_port()
            async with threadline(tmp_path, port, **settings) as first:
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                shared = slack.files.share("notes.txt", NOTES, "text/plain")
                slack.files.faults[shared["id"]] = Fault(seconds=8)  # 2 MB over 8 s
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} read these", files=[shared])
                await slack.wait_for(
                    lambda: (
                        bool(slack.files.downloads)
                        and all(d.acked_in is not None for d in slack.deliveries)
                    ),
                    WAIT,
                )  # Slack has its acknowledgement, and the download is under way
                first.send_signal(signal.SIGKILL)
                await first.wait()

            del slack.files.faults[shared["id"]]
            async with threadline(tmp_path, port, **settings):
                await slack.wait_for(lambda: bool(slack.replies("CGENERAL", root.ts)), WAIT)
                await slack.say("UADA", "CGENERAL", "and this?", thread_ts=root.ts)
                await slack.wait_for(
                    lambda: (
                        [m.shown for m in slack.replies("CGENERAL", root.ts)]
                        == ["Read your notes.", "Yes, that too."]
                    ),
                    WAIT,
                )

        first_request = model.requests[0].messages[-1]["content"]
        text = first_request if isinstance(first_request, str) else first_request[0]["text"]
        assert "Shared 1 file" in text and "- notes.txt (1.9 MB, text, 100,000 lines)" in text
        assert [served for _, served in slack.files.downloads] == [True, True]  # once each run
        saved = list((tmp_path / "data" / "workspaces").glob("*/notes.txt"))
        assert [p.read_bytes() for p in saved] == [NOTES]
    finally:
        await slack.stop()


async def test_a_reply_that_arrives_before_its_mention_is_answered(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(Reply("Let us plan."), Reply("Thanks for the notes."))
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "THREADLINE_MODEL": "gpt-4o",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
            }
            async with threadline(tmp_path, free_port(), **settings):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                general = slack.workspace.channels["CGENERAL"]
                root = slack.workspace.post("CGENERAL", "UADA", f"{MENTION} plan the release")
                reply = slack.workspace.post(
                    "CGENERAL", "UGRACE", "I take the notes", thread_ts=root.ts
                )
                await slack.deliver_event(payloads.message_event(reply, general))  # first
                await slack.deliver_event(payloads.message_event(root, general))
                await slack.deliver_event(payloads.mention_event(root))
                await slack.wait_for(
                    lambda: (
                        [m.shown for m in slack.replies("CGENERAL", root.ts)]
                        == ["Let us plan.", "Thanks for the notes."]
                    ),
                    WAIT,
                )
        asked = [r.messages[-1]["content"] for r in model.requests]
        assert [a if isinstance(a, str) else a[0]["text"] for a in asked] == [
            "[Ada]: plan the release",
            "[Grace]: I take the notes",
        ]
    finally:
        await slack.stop()


async def test_hostile_attachments_and_frames_on_discord(tmp_path: Path) -> None:
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        guild = fake.world.add_guild("Lab")
        channel = fake.world.add_channel(guild, "general")
        ada = fake.world.add_user("Ada", guild=guild)
        extra = {"THREADLINE_FILE_DOWNLOAD_SECONDS": "3"}
        async with discord_threadline(tmp_path, fake, extra) as (_, output):
            for frame in ("[]", "not JSON", b"\xff\xfe", "[" * 100_000):
                fake.gateway.send_frame(frame)
            bot = f"<@{fake.world.bot.id}>"
            silent = fake.cdn.attachment(
                channel.id, "data.csv", b"a,b\n", "text/csv", fault=Fault(silent=True)
            )
            hanging = fake.say(channel, ada, f"{bot} summarise", attachments=[silent])
            book = fake.cdn.attachment(
                channel.id, "book.pdf", many_pages_pdf(100_000), "application/pdf"
            )
            big = fake.say(channel, ada, f"{bot} read the book", attachments=[book])
            notes = {}
            for asked in (hanging, big):
                await fake.wait_for(lambda a=asked: fake.world.messages[a.id].thread_id, WAIT)
                thread = fake.world.channels[asked.id]
                await fake.wait_for(lambda t=thread: fake.world.shown(t.id), WAIT)
                notes[asked.id] = fake.world.shown(thread.id)[0]

        assert (
            "data.csv: not read (the download did not finish within 3 s and was stopped)"
            in notes[hanging.id]
        )
        assert "book.pdf: read pages 1–50 of 100,000" in notes[big.id]
        assert len(fake.gateway.connections) == 1, "".join(output.lines)  # never reconnected
        assert sum("skipped a frame from Discord" in line for line in output.lines) == 4
    finally:
        await fake.close()
