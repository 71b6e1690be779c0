"""Files in and out of a Slack thread, with the real slack-bolt and slack_sdk against the fake
Slack: shared files downloaded with the bot token into the thread's workspace and named to the
model with a preview; images shown to a model that sees them; what cannot be read said in the
thread while the message is still answered; ``send_file`` uploading through
``files.getUploadURLExternal`` and ``files.completeUploadExternal``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from adapters.slack.files import token_may_go
from bot.llm.messages import UserMessage
from bot.llm.wire import message_to_wire
from bot.tools.sandbox import directory_name
from tests.adapters.slack.conftest import slack_world
from tests.fakes.documents import CSV, PNG, many_pages_pdf, scanned_pdf, text_pdf
from tests.fakes.faulty_body import Fault
from tests.fakes.recorder import Recorder
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION
from tests.fakes.slack.server import ALL_SCOPES

WAIT = 30.0


def asked(model: ScriptedModel) -> UserMessage:
    return next(m for m in reversed(model.requests[0].messages) if isinstance(m, UserMessage))


def workspace(root: Path) -> Path:
    (found,) = (root / "data" / "workspaces").iterdir()
    return found


async def test_a_message_that_is_only_a_file_is_about_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([text("Lyon is the smallest.")])
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        fake = world.fake
        shared = fake.files.share("cities.csv", CSV, "text/csv")
        root = await fake.say("UADA", "CGENERAL", MENTION, files=[shared])
        await world.answered(root, 1, WAIT)

        message = asked(model)
        assert message.text.startswith("Shared 1 file (saved in your workspace")
        assert (
            "- cities.csv (59 bytes, text, 4 lines). Start:\n```\ncity,population\nParis"
            in message.text
        )
        assert (workspace(tmp_path) / "cities.csv").read_bytes() == CSV
        assert fake.files.downloads == [(shared["id"], True)]
        assert fake.thread("CGENERAL", root.ts)[-1].shown == "Lyon is the smallest."


async def test_pdfs_images_and_refusals_each_get_a_note_and_the_text_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([text("Read what I could.")])
    async with slack_world(
        tmp_path, monkeypatch, model=model, vision="on", file_max_bytes=4096
    ) as world:
        fake = world.fake
        report = fake.files.share(
            "../../report.pdf", text_pdf("Revenue grew 12 percent"), "application/pdf"
        )
        scan = fake.files.share("scan.pdf", scanned_pdf(), "application/pdf")
        photo = fake.files.share("photo.png", PNG, "image/png")
        big = fake.files.share("dump.bin", bytes(10_000), "application/octet-stream")
        lying = fake.files.share("small.txt", b"x" * 5000, "text/plain", size=10)
        root = await fake.say(
            "UADA",
            "CGENERAL",
            f"{MENTION} summarise these",
            files=[report, scan, photo, big, lying],
        )
        (reply,) = await world.answered(root, 1, WAIT)

        message = asked(model)
        assert message.text.startswith("summarise these\n\nShared 5 files")
        assert "- report.pdf (" in message.text and "its text is in report.pdf.txt" in message.text
        assert "Revenue grew 12 percent" in message.text
        assert "scan.pdf (" in message.text and "no text layer" in message.text
        assert "photo.png (" in message.text and "shown to you" in message.text
        assert "dump.bin: not downloaded (9.8 KB, larger than the 4.0 KB cap)" in message.text
        assert "small.txt: not downloaded (larger than the 4.0 KB cap)" in message.text
        wire = message_to_wire(message, {})
        assert wire["content"][1] == {"type": "image_url", "image_url": {"url": message.images[0]}}
        assert message.images[0].startswith("data:image/png;base64,")

        files = sorted(p.name for p in workspace(tmp_path).iterdir())
        assert files == ["photo.png", "report.pdf", "report.pdf.txt", "scan.pdf"]
        assert "About the files: " in reply.shown
        assert "scan.pdf: saved, but it has no text layer" in reply.shown
        assert "dump.bin: not read (9.8 KB, larger than the 4.0 KB cap)" in reply.shown
        assert reply.shown.endswith("Read what I could.")
        assert big["id"] not in [f for f, _ in fake.files.downloads]  # its size was enough


async def test_a_file_the_token_may_not_download_and_an_image_without_vision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([text("Noted.")])
    fake_scopes = ALL_SCOPES - {"files:read"}
    from tests.fakes.slack import FakeSlack

    async with slack_world(
        tmp_path, monkeypatch, model=model, fake=FakeSlack(scopes=fake_scopes), vision="off"
    ) as world:
        fake = world.fake
        notes = fake.files.share("notes.txt", b"secret plans", "text/plain")
        root = await fake.say("UADA", "CGENERAL", f"{MENTION} look", files=[notes])
        (reply,) = await world.answered(root, 1, WAIT)
        message = asked(model)
        assert "notes.txt: not downloaded (the bot's token may not download it" in message.text
        assert "secret plans" not in message.text and "Sign in" not in message.text
        assert "files:read" in reply.shown and reply.shown.endswith("Noted.")
        assert fake.files.downloads == [(notes["id"], False)]

        picture = fake.files.share("cat.png", PNG, "image/png")
        fake.api.tokens.scopes.add("files:read")
        await fake.say("UADA", "CGENERAL", "and this?", thread_ts=root.ts, files=[picture])
        await world.answered(root, 2, WAIT)
        later = [m for m in model.requests[-1].messages if isinstance(m, UserMessage)][-1]
        assert "cat.png (" in later.text and "this model cannot see images" in later.text
        assert later.images == ()


async def test_send_file_uploads_a_workspace_file_into_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [
            step(call("write_file", {"path": "out/report.md", "content": "# Totals\n42\n"})),
            step(call("send_file", {"path": "out/report.md"})),
            step(call("send_file", {"path": "../../etc/passwd"})),
            text("Here it is."),
        ]
    )
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        fake = world.fake
        root = await fake.say("UADA", "CGENERAL", f"{MENTION} write me a report")
        await fake.wait_for(
            lambda: any(m.shown.endswith("Here it is.") for m in fake.thread("CGENERAL", root.ts)),
            WAIT,
        )
        await world.idle()
        (shared,) = fake.files.shared
        assert (shared.channel, shared.thread_ts, shared.name, shared.data) == (
            "CGENERAL",
            root.ts,
            "report.md",
            b"# Totals\n42\n",
        )
        assert fake.count("files.getUploadURLExternal") == 1
        assert fake.count("files.completeUploadExternal") == 1
        results = [m for m in model.requests[-1].messages if getattr(m, "role", "") == "tool"]
        assert results[1].content.startswith("Posted report.md (12 bytes)")
        assert results[2].is_error and "outside the workspace" in results[2].content
        assert directory_name(f"slack:T0FAKE:CGENERAL:{root.ts}")  # one workspace per thread


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_the_token_goes_to_no_host_but_slacks_and_a_refused_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Literal["socket", "http"]
) -> None:
    model = ScriptedModel([text("Read what I could.")])
    async with (
        Recorder() as elsewhere,
        slack_world(tmp_path, monkeypatch, mode=mode, model=model) as world,
    ):
        fake = world.fake
        planted = fake.files.share("planted.txt", b"bait", "text/plain")
        planted["url_private"] = f"{elsewhere.base_url}/files-pri/{planted['id']}/planted.txt"
        moved = fake.files.share("moved.txt", b"gone", "text/plain")
        fake.files.moved[moved["id"]] = f"{elsewhere.base_url}/steal"
        good = fake.files.share("good.txt", b"kept", "text/plain")
        root = await fake.say(
            "UADA", "CGENERAL", f"{MENTION} read these", files=[planted, moved, good]
        )
        (reply,) = await world.answered(root, 1, WAIT)

        assert elsewhere.seen == []  # nothing fetched there, with the token or without
        message = asked(model)
        where = f"127.0.0.1:{elsewhere.port}"
        assert f"planted.txt: not downloaded (its link leads to {where}, not to Slack's" in (
            message.text
        )
        assert f"moved.txt: not downloaded (Slack redirected the download to {where}" in (
            message.text
        )
        assert "- good.txt (4 bytes, text" in message.text
        assert "planted.txt: not read (its link leads to" in reply.shown
        assert "moved.txt: not read (Slack redirected the download" in reply.shown
        assert fake.files.downloads == [(good["id"], True)]
        assert sorted(p.name for p in workspace(tmp_path).iterdir()) == ["good.txt"]


def test_the_token_may_go_only_to_slacks_file_hosts_over_https_or_the_api_origin() -> None:
    api = "http://127.0.0.1:8123/api/"
    assert token_may_go("https://files.slack.com/files-pri/T1-F1/a.txt", api)
    assert token_may_go("https://files.slack-gov.com/files-pri/T1-F1/a.txt", api)
    assert token_may_go("http://127.0.0.1:8123/files-pri/F1/a.txt", api)
    for url in (
        "http://files.slack.com/files-pri/T1-F1/a.txt",
        "https://files.slack.com:8443/files-pri/T1-F1/a.txt",
        "https://files.slack.com.example.net/a.txt",
        "https://example.slack.com/files-pri/T1-F1/a.txt",
        "http://127.0.0.1:8124/files-pri/F1/a.txt",
        "https://127.0.0.1:8123/files-pri/F1/a.txt",
        "file:///etc/passwd",
        "not a url",
    ):
        assert not token_may_go(url, api), url


async def test_silent_overlong_and_huge_files_are_stopped_with_a_note_and_fetched_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([text("Answered what I could.")])
    async with slack_world(
        tmp_path, monkeypatch, model=model, file_max_bytes=1024 * 1024, file_download_seconds=2
    ) as world:
        fake = world.fake
        silent = fake.files.share("silent.csv", CSV, "text/csv")
        fake.files.faults[silent["id"]] = Fault(silent=True)
        lying = fake.files.share("small.txt", b"x", "text/plain", size=10)
        fake.files.faults[lying["id"]] = Fault(body_bytes=50 * 1024 * 1024)
        book = fake.files.share("book.pdf", many_pages_pdf(2_000), "application/pdf")
        root = await fake.say(
            "UADA", "CGENERAL", f"{MENTION} read these", files=[silent, lying, book]
        )
        (reply,) = await world.answered(root, 1, WAIT)

        assert "silent.csv: not read (the download did not finish within 2 s" in reply.shown
        assert "small.txt: not read (larger than the 1.0 MB cap)" in reply.shown
        assert "book.pdf: read pages 1–50 of 2,000 (the bot reads at most 50)" in reply.shown
        assert reply.shown.endswith("Answered what I could.")
        # the message and its mention carry the same files: each is fetched once
        assert sorted(f for f, _ in fake.files.downloads) == sorted(
            [silent["id"], lying["id"], book["id"]]
        )
