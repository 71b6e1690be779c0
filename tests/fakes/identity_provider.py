"""A fake enterprise identity provider's token endpoint, as enterprise-managed authorization
(SEP-990) uses it: ``POST /token`` takes an RFC 8693 token exchange of an ID token for an
identity assertion grant (ID-JAG) and answers with ``grant`` — or, told to refuse, with
``invalid_grant`` (its description repeating the ID token it was given, as a careless provider
might). Every request's form and ``Authorization`` header are kept."""

from __future__ import annotations

from typing import Any

from aiohttp import web

ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class FakeIdentityProvider:
    def __init__(self, grant: str = "id-jag-for-the-as", refuse: bool = False) -> None:
        self.grant = grant
        self.refuse = refuse
        self.requests: list[dict[str, str]] = []
        """Each token request's form fields."""
        self.authorizations: list[str | None] = []
        """Each token request's ``Authorization`` header (None: none)."""
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def token_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/token"

    async def __aenter__(self) -> FakeIdentityProvider:
        app = web.Application()
        app.router.add_post("/token", self._token)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _token(self, request: web.Request) -> web.Response:
        asked = {k: str(v) for k, v in (await request.post()).items()}
        self.requests.append(asked)
        self.authorizations.append(request.headers.get("Authorization"))
        if self.refuse:
            said: dict[str, Any] = {
                "error": "invalid_grant",
                "error_description": f"subject token {asked.get('subject_token')} is expired",
            }
            return web.json_response(said, status=400)
        return web.json_response(
            {"access_token": self.grant, "issued_token_type": ID_JAG, "token_type": "N_A"}
        )
