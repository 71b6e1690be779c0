"""Files in a Discord thread: attachments downloaded from their (signed) CDN URLs through the
client's session, and workspace files posted as a message's attachment (a multipart create).

The size an attachment declares is checked by the core before downloading; the download is
still cut at the cap. An attachment whose URL is not on Discord's CDN (or the configured API's
origin) is refused before any request is made.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import discord

from adapters.discord.endpoints import from_discord
from bot.api.inbound import Attachment
from bot.api.kit import size_words
from bot.errors import FileRefused, SurfaceError


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
        try:
            data = await self._client.http.get_from_cdn(file.url)
        except discord.NotFound:
            raise FileRefused(
                "Discord no longer has it (the link expired or it was deleted)"
            ) from None
        except discord.Forbidden:
            raise FileRefused("Discord refused the download") from None
        except discord.HTTPException as exc:
            raise SurfaceError(f"the download failed: Discord said {exc.status}") from exc
        if len(data) > limit:
            raise FileRefused(f"larger than the {size_words(limit)} cap")
        return data

    async def send(self, name: str, data: bytes) -> None:
        upload = discord.File(io.BytesIO(data), filename=name)
        await self._call("post a file", lambda: self._channel.send(file=upload))
