"""``threadline doctor``'s lines about the playground: where it is served, and who may use it."""

from __future__ import annotations

from adapters.playground.access import check_exposure
from bot.config import Settings
from bot.errors import ConfigError


def check_playground(settings: Settings) -> list[tuple[bool | None, str]]:
    url = f"http://{settings.http_host}:{settings.http_port}"
    secret = settings.playground_token
    token = (secret.get_secret_value() or None) if secret is not None else None
    try:
        check_exposure(settings.http_host, token)
    except ConfigError as exc:
        return [(False, f"playground on {url}: {exc}")]
    if token is not None:
        return [(True, f"playground will be served on {url}, to those who open it once as "
                       "/?token=<THREADLINE_PLAYGROUND_TOKEN>")]
    return [(None, f"playground will be served on {url} (this machine only)")]
