"""``threadline doctor``'s lines about the playground: where it is served, who may use it, and
the files it keeps."""

from __future__ import annotations

from adapters.playground.access import check_exposure
from adapters.playground.uploads import body_limit
from bot.api.kit import size_words
from bot.config import Settings
from bot.errors import ConfigError


def check_playground(settings: Settings) -> list[tuple[bool | None, str]]:
    return [*_exposure(settings), _files(settings)]


def _files(settings: Settings) -> tuple[bool | None, str]:
    cap = settings.file_max_bytes
    return (
        None,
        f"playground files: kept in {settings.data_dir / 'playground_files'}, up to "
        f"{size_words(cap)} each (a larger one is named, not kept; more than "
        f"{size_words(body_limit(cap))} in one message is refused)",
    )


def _exposure(settings: Settings) -> list[tuple[bool | None, str]]:
    url = f"http://{settings.http_host}:{settings.http_port}"
    secret = settings.playground_token
    token = (secret.get_secret_value() or None) if secret is not None else None
    try:
        check_exposure(settings.http_host, token)
    except ConfigError as exc:
        return [(False, f"playground on {url}: {exc}")]
    if token is not None:
        return [
            (
                True,
                f"playground will be served on {url}, to those who open it once as "
                "/?token=<THREADLINE_PLAYGROUND_TOKEN>",
            )
        ]
    return [(None, f"playground will be served on {url} (this machine only)")]
