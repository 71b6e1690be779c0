"""A fake OAuth 2.1 authorization server, as an MCP server's sign-in uses it: its metadata
(RFC 8414, with a revocation endpoint), dynamic client registration, an authorization endpoint
that signs in whoever comes at once (the browser is sent back to the redirect URI with a code
and the state), a token endpoint (authorization code with PKCE S256, refresh) and revocation
(RFC 7009). With ``assertion``, the token endpoint also takes the RFC 7523 jwt-bearer grant
of enterprise-managed authorization (SEP-990): that assertion from the confidential client
``client`` (its secret in a Basic header or in the form), refused with ``invalid_grant``
otherwise (its description repeating the assertion, as a careless server might). It issues
``token`` as every access token (with ``distinct``, ``token-1``,
``token-2``… one per sign-in, kept with its refresh token); :attr:`revoked` lists what was
revoked."""

from __future__ import annotations

import base64
import hashlib
import itertools
from typing import Any
from urllib.parse import unquote, urlencode

from aiohttp import web

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class FakeOAuthServer:
    def __init__(
        self,
        token: str = "right",
        expires_in: int = 3600,
        distinct: bool = False,
        assertion: str | None = None,
        client: tuple[str, str] = ("", ""),
    ) -> None:
        self.token = token
        self.assertion = assertion
        self.client = client
        self.token_headers: list[str | None] = []
        """Each token request's ``Authorization`` header (None: none)."""
        self.distinct = distinct
        self.issued: list[str] = []
        """Each access token issued for a code, in order."""
        self._numbers = itertools.count(1)
        self._renews: dict[str, str] = {}
        """The access token each refresh token renews."""
        self.expires_in = expires_in
        self.port = 0
        self.registered: list[dict[str, Any]] = []
        self.authorizations: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        self.revoked: list[str] = []
        self._codes: dict[str, str] = {}
        """Each code issued, and the PKCE challenge it was asked with."""
        self._refresh = (f"refresh-{n}" for n in itertools.count(1))
        self._runner: web.AppRunner | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeOAuthServer:
        app = web.Application()
        app.router.add_get("/.well-known/oauth-authorization-server", self._metadata)
        app.router.add_post("/register", self._register)
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        app.router.add_post("/revoke", self._revoke)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _metadata(self, request: web.Request) -> web.Response:
        base = self.issuer
        return web.json_response(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register",
                "revocation_endpoint": f"{base}/revoke",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }
        )

    async def _register(self, request: web.Request) -> web.Response:
        asked = await request.json()
        self.registered.append(asked)
        client = {
            **asked,
            "client_id": f"client-{len(self.registered)}",
            "token_endpoint_auth_method": "none",
        }
        return web.json_response(client, status=201)

    async def _authorize(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.authorizations.append(query)
        code = f"code-{len(self.authorizations)}"
        self._codes[code] = query.get("code_challenge", "")
        back = {"code": code, "state": query.get("state", ""), "iss": self.issuer}
        raise web.HTTPFound(f"{query['redirect_uri']}?{urlencode(back)}")

    async def _token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        asked = {k: str(v) for k, v in form.items()}
        self.token_requests.append(asked)
        self.token_headers.append(request.headers.get("Authorization"))
        if asked.get("grant_type") == JWT_BEARER and self.assertion is not None:
            if asked.get("assertion") != self.assertion or not self._client_of(request, asked):
                said = f"assertion {asked.get('assertion')} is not trusted"
                return web.json_response(
                    {"error": "invalid_grant", "error_description": said}, status=400
                )
            access = self.token
        elif asked.get("grant_type") == "authorization_code":
            challenge = self._codes.pop(asked.get("code", ""), None)
            verifier = asked.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            if challenge != base64.urlsafe_b64encode(digest).decode().rstrip("="):
                return web.json_response({"error": "invalid_grant"}, status=400)
            access = f"{self.token}-{next(self._numbers)}" if self.distinct else self.token
            self.issued.append(access)
        elif asked.get("grant_type") == "refresh_token":
            if asked.get("refresh_token") in self.revoked:
                return web.json_response({"error": "invalid_grant"}, status=400)
            access = self._renews.get(asked.get("refresh_token", ""), self.token)
        else:
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        refresh = next(self._refresh)
        self._renews[refresh] = access
        return web.json_response(
            {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": self.expires_in,
                "refresh_token": refresh,
            }
        )

    def _client_of(self, request: web.Request, asked: dict[str, str]) -> bool:
        """Whether the request authenticates as :attr:`client` (Basic, or in the form)."""
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            pair = base64.b64decode(header.removeprefix("Basic ")).decode()
            given = tuple(unquote(p) for p in pair.split(":", 1))
        else:
            given = (asked.get("client_id", ""), asked.get("client_secret", ""))
        return given == self.client

    async def _revoke(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.revoked.append(str(form.get("token", "")))
        return web.Response(status=200)
