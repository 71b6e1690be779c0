"""Slack's files in the fake: what people share (``url_private``, downloaded only with the bot
token and ``files:read``) and what the app uploads (``files.getUploadURLExternal``, a POST of
the bytes to the upload URL, ``files.completeUploadExternal`` sharing it into a thread).

As Slack does, a download without a token that may read the file answers with the sign-in
page (HTTP 200, ``text/html``) rather than an error status.
"""

from __future__ import annotations

import itertools
import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.faulty_body import Fault, serve
from tests.fakes.slack.wire import SlackError

SIGN_IN = (
    b"<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"
)
MAX_UPLOAD = 1024 * 1024 * 1024


@dataclass
class StoredFile:
    id: str
    name: str
    data: bytes
    mimetype: str
    declared: int = 0
    """The length announced by ``files.getUploadURLExternal`` (uploads only)."""
    uploaded: bool = False


@dataclass(frozen=True)
class Shared:
    """A file the app shared into a thread."""

    channel: str
    thread_ts: str | None
    name: str
    data: bytes
    title: str


@dataclass
class SlackFiles:
    base_url: Callable[[], str]
    may_download: Callable[[str | None], bool]
    """Whether a request with this bearer token may read files (the bot token with files:read)."""
    post: Callable[[str, str | None, str], str]
    """Posts the bot's message announcing an upload in a thread; returns its ts."""
    files: dict[str, StoredFile] = field(default_factory=dict)
    shared: list[Shared] = field(default_factory=list)
    downloads: list[tuple[str, bool]] = field(default_factory=list)
    """(file id, served) for every download attempt."""
    moved: dict[str, str] = field(default_factory=dict)
    """File id → where its download redirects (``302``), for files that moved."""
    faults: dict[str, Fault] = field(default_factory=dict)
    """File id → how its download misbehaves (slow, silent, longer than declared)."""
    changed: Callable[[], None] = lambda: None
    """Wakes whoever waits on the fake (a download began, or went on)."""
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/files-pri/{id}/{name}", self.download)
        app.router.add_post("/upload/v1/{id}", self.upload)

    # --- people share ---------------------------------------------------------------------------
    def share(
        self, name: str, data: bytes, mimetype: str = "text/plain", *, size: int | None = None
    ) -> dict[str, Any]:
        """A file a person shares: the ``files`` item of their message event (``size`` may lie)."""
        stored = StoredFile(f"F{next(self._ids):08d}", name, data, mimetype)
        self.files[stored.id] = stored
        quoted = urllib.parse.quote(name, safe="")
        return {
            "id": stored.id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rpartition(".")[2] if "." in name else "binary",
            "size": len(data) if size is None else size,
            "url_private": f"{self.base_url()}/files-pri/{stored.id}/{quoted}",
            "url_private_download": f"{self.base_url()}/files-pri/{stored.id}/download/{quoted}",
        }

    async def download(self, request: web.Request) -> web.Response:
        if (target := self.moved.get(request.match_info["id"])) is not None:
            raise web.HTTPFound(target)
        stored = self.files.get(request.match_info["id"])
        header = request.headers.get("Authorization", "")
        token = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else None
        if stored is None or not self.may_download(token):
            self.downloads.append((request.match_info["id"], False))
            return web.Response(body=SIGN_IN, content_type="text/html")
        self.downloads.append((stored.id, True))
        self.changed()
        fault = self.faults.get(stored.id)
        if fault is not None:
            return await serve(request, stored.data, stored.mimetype, fault, self.changed)
        return web.Response(body=stored.data, content_type=stored.mimetype)

    def release(self) -> None:
        """End every silent download (the fake is stopping)."""
        for fault in self.faults.values():
            fault.released.set()

    # --- the app uploads ------------------------------------------------------------------------
    def get_upload_url(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("filename")
        try:
            length = int(args.get("length", ""))
        except ValueError:
            raise SlackError("invalid_arguments") from None
        if not isinstance(name, str) or not name or not 0 < length <= MAX_UPLOAD:
            raise SlackError("invalid_arguments")
        stored = StoredFile(
            f"F{next(self._ids):08d}", name, b"", "application/octet-stream", length
        )
        self.files[stored.id] = stored
        return {"upload_url": f"{self.base_url()}/upload/v1/{stored.id}", "file_id": stored.id}

    async def upload(self, request: web.Request) -> web.Response:
        stored = self.files.get(request.match_info["id"])
        if stored is None or stored.uploaded:
            return web.Response(status=404, text="no such upload")
        data = await request.read()
        if len(data) != stored.declared:
            return web.Response(status=400, text="length does not match")
        stored.data, stored.uploaded = data, True
        return web.Response(text=f"OK - {len(data)}")

    def complete_upload(self, args: dict[str, Any], channel: str | None) -> dict[str, Any]:
        raw = args.get("files")
        try:
            items = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            raise SlackError("invalid_arguments") from None
        if not isinstance(items, list) or not items:
            raise SlackError("invalid_arguments")
        thread_ts = args.get("thread_ts") or None
        done = []
        for item in items:
            stored = self.files.get(str(item.get("id"))) if isinstance(item, dict) else None
            if stored is None or not stored.uploaded:
                raise SlackError("file_not_found")
            done.append((stored, str(item.get("title") or stored.name)))
        if channel is not None:
            comment = args.get("initial_comment")
            self.post(channel, thread_ts, comment if isinstance(comment, str) else "")
            for stored, title in done:
                self.shared.append(Shared(channel, thread_ts, stored.name, stored.data, title))
        return {"files": [{"id": s.id, "name": s.name, "title": t} for s, t in done]}
