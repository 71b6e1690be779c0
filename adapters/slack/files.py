"""Files in a Slack thread: a shared file's ``url_private`` downloaded with the bot token
(``files:read``), and the bot's uploads (``files:write``: ``files.getUploadURLExternal``, the
bytes posted to the URL it gives, ``files.completeUploadExternal`` into the thread).

Slack answers a download it will not serve with its sign-in page (HTTP 200, HTML), not an
error status: an HTML answer for a file that is not HTML is a refusal.
"""

from __future__ import annotations

import aiohttp

from adapters.slack.api import TIMEOUT_S, SlackApi, guarded
from bot.conversation import Attachment
from bot.errors import FileRefused, SurfaceError
from bot.files.kinds import size_words

CHUNK = 64 * 1024
NO_TOKEN = "the bot's token may not download it (is the files:read scope granted?)"


class SlackFileTransfer:
    def __init__(self, api: SlackApi, channel: str, thread_ts: str) -> None:
        self._api = api
        self._channel = channel
        self._thread_ts = thread_ts

    async def fetch(self, file: Attachment, limit: int) -> bytes:
        token, session = self._api.client.token, self._api.client.session
        if not token or session is None:
            raise FileRefused(NO_TOKEN)
        headers = {"Authorization": f"Bearer {token}"}
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_S * 4)
        try:
            async with session.get(file.url, headers=headers, timeout=timeout) as response:
                if response.status != 200:
                    raise FileRefused(f"Slack answered HTTP {response.status} to the download")
                html = response.content_type == "text/html"
                if html and not (file.mimetype or "").startswith("text/html"):
                    raise FileRefused(NO_TOKEN)
                data = bytearray()
                async for chunk in response.content.iter_chunked(CHUNK):
                    data += chunk
                    if len(data) > limit:
                        raise FileRefused(f"larger than the {size_words(limit)} cap")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise SurfaceError(f"Slack file download failed: {type(exc).__name__}") from exc
        return bytes(data)

    async def send(self, name: str, data: bytes) -> None:
        await guarded(
            "files.completeUploadExternal",
            self._api.client.files_upload_v2(
                channel=self._channel,
                thread_ts=self._thread_ts,
                filename=name,
                title=name,
                content=data,
            ),
        )
