"""The fake's attachment CDN and multipart uploads.

People's attachments are served at ``/attachments/{channel}/{id}/{name}`` (as Discord's CDN
does, with signed query parameters and no authorization). A message created with files is a
``multipart/form-data`` request: a ``payload_json`` part and ``files[n]`` parts, each at most
:data:`MAX_UPLOAD` bytes (else ``413``, code 40005, as Discord answers).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.discord.model import ApiError
from tests.fakes.faulty_body import Fault, serve

MAX_UPLOAD = 10 * 1024 * 1024
"""Discord's upload limit for a server without boosts (10 MiB)."""


@dataclass
class Cdn:
    base_url: Callable[[], str]
    snowflake: Callable[[], int]
    changed: Callable[[], None] = lambda: None
    """Wakes whoever waits on the world (a download began)."""
    blobs: dict[int, bytes] = field(default_factory=dict)
    served: list[int] = field(default_factory=list)
    faults: dict[int, Fault] = field(default_factory=dict)
    """Attachment id → how its download misbehaves (slow, silent, longer than declared)."""

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/attachments/{cid:\\d+}/{aid:\\d+}/{name}", self.download)

    def attachment(
        self,
        channel_id: int,
        name: str,
        data: bytes,
        content_type: str,
        *,
        size: int | None = None,
        fault: Fault | None = None,
    ) -> dict[str, Any]:
        """An attachment served at its signed URL (``size``: what it declares, may lie)."""
        aid = self.snowflake()
        if fault is not None:
            self.faults[aid] = fault
        self.blobs[aid] = data
        url = (
            f"{self.base_url()}/attachments/{channel_id}/{aid}/{urllib.parse.quote(name, safe='')}"
        )
        signed = f"{url}?ex=6a000000&is=69f00000&hm=fakesignature"
        return {
            "id": str(aid),
            "filename": name,
            "size": len(data) if size is None else size,
            "url": signed,
            "proxy_url": signed,
            "content_type": content_type,
        }

    async def download(self, request: web.Request) -> web.Response:
        aid = int(request.match_info["aid"])
        data = self.blobs.get(aid)
        if data is None or "hm" not in request.query:
            return web.Response(status=404, text="This content is no longer available.")
        self.served.append(aid)
        self.changed()
        fault = self.faults.get(aid)
        if fault is not None:
            return await serve(request, data, "application/octet-stream", fault)
        return web.Response(body=data, content_type="application/octet-stream")

    def release(self) -> None:
        """End every silent download (the fake is stopping)."""
        for fault in self.faults.values():
            fault.released.set()

    async def read_multipart(
        self, request: web.Request, channel_id: int
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The ``payload_json`` of a multipart message and its files as attachment objects."""
        reader = await request.multipart()
        payload: dict[str, Any] = {}
        found: list[dict[str, Any]] = []
        while (part := await reader.next()) is not None:
            if not isinstance(part, aiohttp.BodyPartReader):
                continue
            if part.name == "payload_json":
                payload = json.loads(await part.text())
            elif part.name is not None and part.name.startswith("files["):
                data = await part.read()
                if len(data) > MAX_UPLOAD:
                    raise ApiError(413, 40005, "Request entity too large")
                name = part.filename or "file"
                found.append(
                    self.attachment(
                        channel_id,
                        name,
                        bytes(data),
                        part.headers.get("Content-Type", "application/octet-stream"),
                    )
                )
        return payload, found

    def data_of(self, attachment: dict[str, Any]) -> bytes:
        return self.blobs[int(attachment["id"])]
