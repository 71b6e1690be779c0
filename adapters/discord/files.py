"""Files in a Discord thread: attachments downloaded from their (signed) CDN URLs, and
workspace files posted as a message's attachment (a multipart create).

The size an attachment declares is checked by the core before downloading, but the declared
size is the sharer's word: the download is streamed and cut as soon as the bytes read pass the
cap (or the ``Content-Length`` announces more), so a file that lies about its size costs at
most the cap in memory. A host that stops sending for :data:`SILENT_S` seconds is given up
(the core also bounds the whole download: ``file_download_seconds``). An attachment whose URL
is not on Discord's CDN (or the configured API's origin) is refused before any request is made.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp
import discord

from adapters.discord.endpoints import from_discord
from bot.api.inbound import Attachment
from bot.api.kit import size_words
from bot.errors import FileRefused, SurfaceError

CHUNK = 64 * 1024
SILENT_S = 30.0
"""A download that receives nothing for this long is stopped."""
CONNECT_S = 15.0


class DiscordFileTransfer:
    def __init__(
        self,
        client: discord.Client,
        channel: discord.PartialMessageable,
        call: Callable[[str, Callable[[], Awaitable[discord.Message]]], Awaitable[discord.Message]],
    ) -> None:
        self._client = client
        self._channel = channel
        self._call = call

    async def fetch(self, file: Attachment, limit: int) -> bytes:
        if not from_discord(file.url):
            where = urlsplit(file.url).netloc or file.url[:80]
            raise FileRefused(
                f"its link leads to {where}, not to Discord's CDN; it was not downloaded"
            )
        http = self._client.http
        timeout = aiohttp.ClientTimeout(sock_connect=CONNECT_S, sock_read=SILENT_S)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(file.url, proxy=http.proxy, proxy_auth=http.proxy_auth) as response,
            ):
                return await _body(response, limit)
        except TimeoutError:
            raise FileRefused(f"Discord's CDN sent nothing for {SILENT_S:g} s; stopped") from None
        except aiohttp.ClientError as exc:
            raise SurfaceError(f"the download failed: {type(exc).__name__}") from exc

    async def send(self, name: str, data: bytes) -> None:
        upload = discord.File(io.BytesIO(data), filename=name)
        await self._call("post a file", lambda: self._channel.send(file=upload))


async def _body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, read in chunks and cut at ``limit`` bytes."""
    if response.status == 404:
        raise FileRefused("Discord no longer has it (the link expired or it was deleted)")
    if response.status == 403:
        raise FileRefused("Discord refused the download")
    if response.status != 200:
        raise SurfaceError(f"the download failed: Discord said {response.status}")
    too_big = f"larger than the {size_words(limit)} cap"
    if response.content_length is not None and response.content_length > limit:
        raise FileRefused(too_big)
    data = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        data += chunk
        if len(data) > limit:
            raise FileRefused(too_big)
    return bytes(data)
