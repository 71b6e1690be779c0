"""Files in the playground, through its HTTP API on the real core: a message's files uploaded as
``multipart/form-data``, kept by the playground and read into the thread's workspace with a
preview for the model; ``send_file`` posting a workspace file as a download; what is refused
(over the cap, empty, a broken body) and names made safe."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import ClientResponse

from adapters.playground.uploads import MAX_PARTS, body_limit
from bot.llm.messages import ToolResult, UserMessage
from tests.adapters.playground.conftest import Playground, open_playground
from tests.fakes.documents import CSV, PNG
from tests.fakes.scripted_model import call, step, text

Part = tuple[str, str | None, bytes]
"""A form part: its field name, its file name (None: a plain field), its bytes."""


def form(*parts: Part, boundary: str = "b0undary") -> tuple[bytes, str]:
    """A ``multipart/form-data`` body written by hand, as any client could send it (names
    with NULs and slashes included); returns it with its content type."""
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"'.encode()
        if filename is not None and filename.isprintable():
            disposition += b'; filename="' + filename.encode() + b'"'
        elif filename is not None:  # as RFC 7578 allows: percent-encoded
            disposition += b"; filename*=UTF-8''" + quote(filename).encode()
        out += b"--" + boundary.encode() + b"\r\nContent-Disposition: " + disposition + b"\r\n"
        if filename is not None:
            out += b"Content-Type: application/octet-stream\r\n"
        out += b"\r\n" + data + b"\r\n"
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, f"multipart/form-data; boundary={boundary}"


async def post_form(
    p: Playground,
    *files: tuple[str, bytes],
    text: str = "",
    thread_id: str | None = None,
    event_id: str | None = None,
    extra: tuple[Part, ...] = (),
) -> ClientResponse:
    fields: list[Part] = [
        ("text", None, text.encode()),
        ("event_id", None, (event_id or uuid.uuid4().hex).encode()),
        ("user_name", None, b"Ada"),
    ]
    if thread_id is not None:
        fields.append(("thread_id", None, thread_id.encode()))
    body, content_type = form(*fields, *(("file", n, d) for n, d in files), *extra)
    return await p.client.post("/api/messages", data=body, headers={"Content-Type": content_type})


async def accepted(response: ClientResponse) -> dict[str, Any]:
    assert response.status == 202, await response.text()
    body: dict[str, Any] = await response.json()
    return body


def asked(p: Playground, turn: int = 0) -> UserMessage:
    """The last user message of the model's request ``turn``."""
    messages = p.model.requests[turn].messages
    return next(m for m in reversed(messages) if isinstance(m, UserMessage))


def workspace(tmp_path: Path) -> Path:
    (found,) = (tmp_path / "data" / "workspaces").iterdir()
    return found


def left_behind(tmp_path: Path) -> list[Path]:
    """Files of uploads that were never accepted."""
    staging = tmp_path / "playground_files" / ".staging"
    return [p for p in staging.rglob("*") if p.is_file()] if staging.exists() else []


async def test_a_csv_reaches_the_model_as_a_preview_and_downloads_as_it_came(
    playground: Playground, tmp_path: Path
) -> None:
    p = playground
    posted = await accepted(await post_form(p, ("cities.csv", CSV), text="Which is largest?"))
    await p.idle()
    shown = await p.thread(posted["thread_id"])
    first = shown["messages"][0]
    assert first["text"] == "Which is largest?"
    (file,) = first["files"]
    assert (file["name"], file["size"], file["mimetype"], file["kept"]) == (
        "cities.csv",
        len(CSV),
        "text/csv",
        True,
    )
    message = asked(p)
    assert message.text.startswith("Which is largest?\n\nShared 1 file")
    assert "- cities.csv (59 bytes, text, 4 lines). Start:" in message.text
    assert "Paris,2102650" in message.text
    assert (workspace(tmp_path) / "cities.csv").read_bytes() == CSV

    download = await p.client.get(f"/api/files/{posted['thread_id']}/{file['id']}")
    assert download.status == 200
    assert await download.read() == CSV
    assert download.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert download.headers["Content-Disposition"] == 'attachment; filename="cities.csv"'
    assert left_behind(tmp_path) == []


async def test_an_image_is_shown_to_a_model_that_sees_images(tmp_path: Path) -> None:
    async with open_playground(tmp_path, vision="on") as p:
        posted = await accepted(await post_form(p, ("cat.png", PNG)))
        await p.idle()
        assert (await p.thread(posted["thread_id"]))["thread"]["title"] == "cat.png"
        message = asked(p)
        assert message.text.startswith("Shared 1 file")
        assert "- cat.png (" in message.text and "shown to you with this message" in message.text
        (image,) = message.images
        assert image.startswith("data:image/png;base64,")


async def test_a_file_over_the_cap_is_named_and_the_rest_is_answered(tmp_path: Path) -> None:
    async with open_playground(tmp_path, file_max_bytes=1024) as p:
        posted = await accepted(
            await post_form(p, ("big.bin", bytes(3000)), ("cities.csv", CSV), text="Read these")
        )
        await p.idle()
        messages = (await p.thread(posted["thread_id"]))["messages"]
        big, small = messages[0]["files"]
        assert (big["name"], big["size"], big["kept"]) == ("big.bin", 3000, False)
        assert small["kept"]
        reply = messages[-1]["text"]
        assert "About the files: big.bin: not read (2.9 KB, larger than the 1.0 KB cap)." in reply
        assert "Ada said: Read these" in reply  # the rest of the message is answered
        assert "Paris,2102650" in asked(p).text
        gone = await p.client.get(f"/api/files/{posted['thread_id']}/{big['id']}")
        assert gone.status == 404
        assert sorted(f.name for f in workspace(tmp_path).iterdir()) == ["cities.csv"]


async def test_unsafe_names_are_made_safe_and_nothing_lands_outside(
    playground: Playground, tmp_path: Path
) -> None:
    p = playground
    long_name = "n" * 300 + ".txt"
    posted = await accepted(
        await post_form(
            p, ("../../x", b"one"), ("a\x00b.txt", b"two"), (long_name, b"three"), text="names"
        )
    )
    await p.idle()
    (message,) = [m for m in (await p.thread(posted["thread_id"]))["messages"] if m["files"]]
    names = [f["name"] for f in message["files"]]
    assert names[:2] == ["x", "a_b.txt"]
    assert len(names[2]) <= 100 and names[2].endswith(".txt")
    assert sorted(f.name for f in workspace(tmp_path).iterdir()) == sorted(names)
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()
    stored = tmp_path / "playground_files" / posted["thread_id"]
    assert sorted(f.read_bytes() for f in stored.iterdir()) == [b"one", b"three", b"two"]


async def test_bad_uploads_are_refused_and_leave_nothing(
    playground: Playground, tmp_path: Path
) -> None:
    p = playground

    async def refused(response: ClientResponse, status: int, words: str) -> None:
        assert response.status == status, await response.text()
        assert words in (await response.json())["error"]

    await refused(await post_form(p, ("empty.txt", b""), text="hi"), 400, "empty.txt is empty")
    await refused(await post_form(p), 400, "the message is empty")
    await refused(
        await post_form(p, ("a.txt", b"a"), extra=(("file", "", b"x"),)), 400, "no file name"
    )
    await refused(
        await post_form(p, ("a.txt", b"a"), extra=(("secret", None, b"x"),)),
        400,
        "unexpected form field 'secret'",
    )
    await refused(
        await post_form(p, ("a.txt", b"a"), event_id="no spaces allowed"), 400, "event_id"
    )
    no_boundary = await p.client.post(
        "/api/messages", data=b"--x\r\n", headers={"Content-Type": "multipart/form-data"}
    )
    await refused(no_boundary, 400, "the multipart body cannot be read")
    raw_nul = await p.client.post(
        "/api/messages",
        data=b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="a\x00"\r\n\r\nabc\r\n--b0undary--\r\n',
        headers={"Content-Type": "multipart/form-data; boundary=b0undary"},
    )
    await refused(raw_nul, 400, "the multipart body cannot be read: Invalid HTTP header")
    cut_short = await p.client.post(
        "/api/messages",
        data=b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc',
        headers={"Content-Type": "multipart/form-data; boundary=b0undary"},
    )
    assert cut_short.status == 400, await cut_short.text()
    many = [(f"f{n}.txt", b"x") for n in range(MAX_PARTS + 1)]
    await refused(await post_form(p, *many), 400, f"a message carries at most {MAX_PARTS} files")
    missing = await post_form(p, ("a.txt", b"a"), thread_id="nosuchthread")
    await refused(missing, 404, "no such thread")

    assert (await (await p.client.get("/api/threads")).json())["threads"] == []
    assert left_behind(tmp_path) == []
    assert not (tmp_path / "data" / "workspaces").exists() or not any(
        (tmp_path / "data" / "workspaces").rglob("*.txt")
    )


async def test_a_retried_upload_is_one_message(playground: Playground, tmp_path: Path) -> None:
    p = playground
    first = await accepted(await post_form(p, ("cities.csv", CSV), event_id="evt-files-01"))
    again = await accepted(await post_form(p, ("cities.csv", CSV), event_id="evt-files-01"))
    await p.idle()
    assert again == first
    messages = (await p.thread(first["thread_id"]))["messages"]
    assert [len(m["files"]) for m in messages if not m["bot"]] == [1]
    assert len(list((tmp_path / "playground_files" / first["thread_id"]).iterdir())) == 1
    assert left_behind(tmp_path) == []


async def test_send_file_posts_a_download_that_never_runs_in_the_page(tmp_path: Path) -> None:
    page = b"<html><script>alert(document.cookie)</script></html>"
    async with open_playground(tmp_path) as p:
        p.model.steps.extend([step(call("send_file", {"path": "report.html"})), text("Sent.")])
        posted = await accepted(await post_form(p, ("report.html", page), text="send it back"))
        thread_id = posted["thread_id"]
        await p.idle()
        messages = (await p.thread(thread_id))["messages"]
        (sent,) = [m for m in messages if m["bot"] and m["files"]]
        assert sent["text"] == ""
        (file,) = sent["files"]
        assert (file["name"], file["size"], file["mimetype"]) == (
            "report.html",
            len(page),
            "text/html",
        )
        result = next(
            m
            for m in p.model.requests[-1].messages
            if isinstance(m, ToolResult) and m.name == "send_file"
        )
        assert result.content == f"Posted report.html ({len(page)} bytes) in the thread."

        download = await p.client.get(f"/api/files/{thread_id}/{file['id']}")
        assert await download.read() == page
        assert download.headers["Content-Disposition"] == 'attachment; filename="report.html"'
        assert download.headers["Content-Type"] == "text/html; charset=utf-8"
        assert download.headers["Content-Security-Policy"] == "sandbox; default-src 'none'"
        assert download.headers["X-Content-Type-Options"] == "nosniff"
        for wrong in (
            f"{thread_id}/..%2F..%2Fplayground.json",
            f"{thread_id}/nosuchfile",
            f"otherthread/{file['id']}",
        ):
            assert (await p.client.get(f"/api/files/{wrong}")).status == 404, wrong

    async with open_playground(tmp_path) as again:  # a restart keeps the files shown
        messages = (await again.thread(thread_id))["messages"]
        assert [f["name"] for m in messages for f in m["files"]] == ["report.html"] * 2
        download = await again.client.get(f"/api/files/{thread_id}/{file['id']}")
        assert download.status == 200 and await download.read() == page


async def test_a_body_beyond_the_upload_limit_is_refused_whole(
    tmp_path: Path,
) -> None:
    async with open_playground(tmp_path, file_max_bytes=1024) as p:
        limit = body_limit(1024)
        chunk = bytes(1024 * 1024)

        async def body() -> AsyncIterator[bytes]:
            head, _ = form(("text", None, b"too much"), ("event_id", None, b"evt-huge-0001"))
            yield head.rsplit(b"--b0undary--", 1)[0]
            yield b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="huge.bin"\r\n\r\n'
            for _ in range(limit // len(chunk) + 2):
                yield chunk
            yield b"\r\n--b0undary--\r\n"

        response = await p.client.post(
            "/api/messages",
            data=body(),
            headers={"Content-Type": "multipart/form-data; boundary=b0undary"},
        )
        assert response.status == 413, await response.text()
        assert "the files are larger than 64.0 MB in all" in (await response.json())["error"]
        assert (await (await p.client.get("/api/threads")).json())["threads"] == []
        assert left_behind(tmp_path) == []


async def test_downloads_need_the_playground_session(playground: Playground) -> None:
    p = playground
    posted = await accepted(await post_form(p, ("cities.csv", CSV), text="keep it"))
    await p.idle()
    (file,) = (await p.thread(posted["thread_id"]))["messages"][0]["files"]
    async with aiohttp.ClientSession() as stranger:
        url = p.client.make_url(f"/api/files/{posted['thread_id']}/{file['id']}")
        async with stranger.get(url) as response:
            assert response.status == 401


async def test_an_upload_a_stop_cut_short_is_cleared_at_start(tmp_path: Path) -> None:
    leftover = tmp_path / "playground_files" / ".staging" / "cut" / "0"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"half an upload")
    async with open_playground(tmp_path):
        assert left_behind(tmp_path) == []
