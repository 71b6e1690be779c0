"""Files in a Slack thread: a shared file's ``url_private`` downloaded with the bot token
(``files:read``), and the bot's uploads (``files:write``: ``files.getUploadURLExternal``, the
bytes posted to the URL it gives, ``files.completeUploadExternal`` into the thread).

The token goes only to Slack's file hosts (:data:`FILE_HOSTS`, over HTTPS) and to the origin of
the configured Web API base (``SLACK_API_URL``: a test's fake Slack, a self-hosted proxy). A
file whose URL points anywhere else is refused before any request is made; redirects are
followed by hand, each hop checked the same way, so no redirect carries the token elsewhere.

Slack answers a download it will not serve with its sign-in page (HTTP 200, HTML), not an
error status: an HTML answer for a file that is not HTML is a refusal. A download is streamed
and cut as soon as it passes the cap; a host that sends nothing for :data:`SILENT_S` seconds is
given up (the core bounds the whole download: ``file_download_seconds``).
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import aiohttp

from adapters.slack.api import TIMEOUT_S, SlackApi
from bot.api.inbound import Attachment
from bot.api.kit import origin_of, size_words
from bot.errors import FileRefused, SurfaceError

CHUNK = 64 * 1024
SILENT_S = 30.0
"""A download that receives nothing for this long is stopped."""
NO_TOKEN = "the bot's token may not download it (is the files:read scope granted?)"
FILE_HOSTS = frozenset({"files.slack.com", "files.slack-gov.com"})
"""Where Slack serves ``url_private`` (commercial Slack and GovSlack), always over HTTPS."""
MAX_REDIRECTS = 3
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
FILE_ORIGINS = frozenset(f"https://{host}" for host in FILE_HOSTS)


def token_may_go(url: str, api_url: str) -> bool:
    """Whether the bot token may be sent with a GET of ``url``: one of Slack's file hosts over
    HTTPS, or the very origin (scheme, host, port) of the Web API base."""
    origin = origin_of(url)
    return origin is not None and (origin in FILE_ORIGINS or origin == origin_of(api_url))


def _where(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc or url[:80]


class SlackFileTransfer:
    def __init__(self, api: SlackApi, channel: str, thread_ts: str) -> None:
        self._api = api
        self._channel = channel
        self._thread_ts = thread_ts

    async def fetch(self, file: Attachment, limit: int) -> bytes:
        token, session = self._api.client.token, self._api.client.session
        if not token or session is None:
            raise FileRefused(NO_TOKEN)
        url = file.url
        if not token_may_go(url, self._api.client.base_url):
            raise FileRefused(
                f"its link leads to {_where(url)}, not to Slack's file hosts; "
                "the bot's token goes only there, so it was not downloaded"
            )
        try:
            return await self._download(session, file, token, limit)
        except TimeoutError:
            raise FileRefused(
                f"Slack's file host sent nothing for {SILENT_S:g} s; stopped"
            ) from None
        except aiohttp.ClientError as exc:
            raise SurfaceError(f"Slack file download failed: {type(exc).__name__}") from exc

    async def _download(
        self, session: aiohttp.ClientSession, file: Attachment, token: str, limit: int
    ) -> bytes:
        url = file.url
        headers = {"Authorization": f"Bearer {token}"}
        timeout = aiohttp.ClientTimeout(sock_connect=TIMEOUT_S, sock_read=SILENT_S)
        for _ in range(MAX_REDIRECTS + 1):
            async with session.get(
                url, headers=headers, timeout=timeout, allow_redirects=False
            ) as response:
                if response.status in _REDIRECTS:
                    url = urljoin(url, response.headers.get("Location", ""))
                    if not token_may_go(url, self._api.client.base_url):
                        raise FileRefused(
                            f"Slack redirected the download to {_where(url)}, "
                            "which is not one of its file hosts; refused"
                        )
                    continue
                return await _body(response, file.mimetype, limit)
        raise FileRefused(f"Slack redirected the download more than {MAX_REDIRECTS} times")

    async def send(self, name: str, data: bytes) -> None:
        await self._api.call(
            "files.completeUploadExternal",
            self._channel,
            lambda: self._api.client.files_upload_v2(
                channel=self._channel,
                thread_ts=self._thread_ts,
                filename=name,
                title=name,
                content=data,
            ),
        )


async def _body(response: aiohttp.ClientResponse, mimetype: str | None, limit: int) -> bytes:
    if response.status != 200:
        raise FileRefused(f"Slack answered HTTP {response.status} to the download")
    html = response.content_type == "text/html"
    if html and not (mimetype or "").startswith("text/html"):
        raise FileRefused(NO_TOKEN)
    data = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        data += chunk
        if len(data) > limit:
            raise FileRefused(f"larger than the {size_words(limit)} cap")
    return bytes(data)
