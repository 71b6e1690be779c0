"""OAuth 2.1 sign-in to an MCP server, as the MCP authorization spec has it, driven by the SDK's
``httpx2.Auth`` providers: protected-resource and authorization-server metadata discovery,
dynamic client registration (or a configured client id, or a client ID metadata document),
PKCE, scope selection and step-up, refresh; and the client-credentials grant (a secret or a
signed JWT) for a bot that signs in as itself.

What the SDK does not do is here too: the sign-in kept across restarts with its expiry and
the authorization server's metadata (a refresh after a restart goes to the right token
endpoint), the client dropped when it was registered for another callback address, token
revocation (RFC 7009) for ``threadline mcp logout``, and a code exchanged after a restart
(:func:`exchange_later`: the link's flow is gone, its PKCE verifier and client were kept).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import time
import warnings
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage, oauth2
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.oauth2 import _origin_issuer
from mcp.client.auth.utils import (
    issuers_match,
    union_scopes,
    validate_authorization_response_iss,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, ValidationError

from bot.mcp.auth import Authorized, Exchange, OAuthAccess, SignInFailed
from bot.mcp.tokens import Record, Slot

log = logging.getLogger(__name__)
MAX_STEP_UPS = 3
"""Sign-ins one request may start (a server that keeps asking for more scope is refused)."""


class SignInRequired(Exception):
    """A new sign-in is needed and no browser is at hand for it (raised inside the flow)."""


_VERIFIER: ContextVar[str | None] = ContextVar("pkce_verifier", default=None)
"""The PKCE verifier the SDK's flow made last in this task (read when its link is shown)."""


class _Pkce(oauth2.PKCEParameters):
    """The SDK's PKCE parameters, the verifier also told to the link's browser (the flow keeps
    it in a local variable, and a code that comes back after a restart needs it)."""

    @classmethod
    def generate(cls) -> oauth2.PKCEParameters:
        made = super().generate()
        _VERIFIER.set(made.code_verifier)
        return made


class _Storage(TokenStorage):
    """The SDK's storage over our :class:`Slot`: the tokens with when they expire, the client."""

    def __init__(self, slot: Slot) -> None:
        self.slot = slot

    async def record(self) -> Record:
        return dict(await self.slot.read() or {})

    async def get_tokens(self) -> OAuthToken | None:
        found = (await self.record()).get("tokens")
        try:
            return OAuthToken.model_validate(found) if found else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self.record()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        record["refreshable"] = tokens.refresh_token is not None
        record["signed_in_at"] = record.get("signed_in_at") or time.time()
        await self.slot.write(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        found = (await self.record()).get("client")
        try:
            return OAuthClientInformationFull.model_validate(found) if found else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = await self.record()
        record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        await self.slot.write(record)

    async def remember(self, metadata: OAuthMetadata | None, resource: Any) -> None:
        record = await self.record()
        if metadata is not None:
            record["authorization_server"] = metadata.model_dump(mode="json", exclude_none=True)
        if resource is not None:
            record["resource"] = resource.model_dump(mode="json", exclude_none=True)
        await self.slot.write(record)


_PORTS = {"https": 443, "http": 80}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port if parts.port is not None else _PORTS.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


async def _vouched(
    server_url: str, response: httpx2.Response
) -> tuple[httpx2.Response, OAuthMetadata | None]:
    """The 2025-03-26 fallback (no protected-resource metadata: the authorization server's
    metadata read at the MCP server's own origin) with an ``issuer`` on that same origin but
    another path (``https://mcp.example.com/oauth``): the origin vouches for its own metadata,
    so it is taken, as the response the SDK checks with the origin as its issuer, and the
    metadata as published kept to be put back after. Any other response is as it came (an
    issuer on another origin is refused by the SDK, RFC 8414 section 3.3)."""
    if response.status_code != 200:
        return response, None
    await response.aread()
    try:
        published = OAuthMetadata.model_validate_json(response.content)
    except ValidationError:
        return response, None
    expected = _origin_issuer(server_url)
    issuer = str(published.issuer)
    if issuers_match(issuer, expected) or _origin(issuer) != _origin(server_url):
        return response, None
    body = response.json() | {"issuer": expected}
    return httpx2.Response(200, json=body, request=response.request), published


class _Restored:
    """What every provider of ours does on its first request: the expiry and the
    authorization server's metadata are read back with the tokens."""

    async def _restore(self, provider: OAuthClientProvider, storage: _Storage) -> None:
        record = await storage.record()
        context = provider.context
        expires = record.get("expires_at")
        context.token_expiry_time = float(expires) if isinstance(expires, int | float) else None
        try:
            if found := record.get("authorization_server"):
                context.oauth_metadata = OAuthMetadata.model_validate(found)
            if found := record.get("resource"):
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    found
                )
        except ValidationError:
            context.oauth_metadata = None

    async def _adopt(self, provider: OAuthClientProvider, storage: _Storage) -> None:
        """Before renewing an expired access token: another worker sharing the sign-in may
        have renewed it already (with a rotated refresh token, ours is spent): take theirs."""
        context = provider.context
        if not provider._initialized or context.is_token_valid():
            return
        record = await storage.record()
        expires = record.get("expires_at")
        if not isinstance(expires, int | float) or expires <= time.time():
            return
        tokens = await storage.get_tokens()
        if tokens is not None and tokens != context.current_tokens:
            context.current_tokens = tokens
            context.token_expiry_time = float(expires)


class _CodeFlow(OAuthClientProvider, _Restored):
    """The authorization-code flow with PKCE."""

    def __init__(self, url: str, access: OAuthAccess, storage: _Storage) -> None:
        config = access.settings
        redirect = AnyUrl(access.redirect_uri)
        metadata = OAuthClientMetadata(
            client_name=config.client_name,
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=config.scope,
            token_endpoint_auth_method=config.token_endpoint_auth_method,
        )
        self._access = access
        self._storage = storage
        self._authorized: Authorized | None = None
        self._sign_ins = 0
        self._fixed: OAuthClientInformationFull | None = None
        if config.client_id is not None:
            method = config.token_endpoint_auth_method or (
                "client_secret_basic" if config.client_secret else "none"
            )
            self._fixed = OAuthClientInformationFull(
                client_id=config.client_id,
                client_secret=config.client_secret,
                redirect_uris=[redirect],
                token_endpoint_auth_method=method,
            )
        super().__init__(
            url,
            metadata,
            storage,
            redirect_handler=self._open,
            callback_handler=self._back,
            client_metadata_url=config.client_metadata_url,
        )

    async def _initialize(self) -> None:
        await super()._initialize()
        if self._fixed is not None:
            self.context.client_info = self._fixed
        elif (
            (client := self.context.client_info) is not None
            and client.redirect_uris
            and str(client.redirect_uris[0]) != self._access.redirect_uri
            and not self._access.settings.client_metadata_url
            and not (self.context.current_tokens and self.context.current_tokens.refresh_token)
        ):
            self.context.client_info = None  # registered for another callback: register again
        await self._restore(self, self._storage)

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow; a request that goes through ends the count of sign-ins in a row."""
        await self._adopt(self, self._storage)
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and response.status_code < 400:
                    self._sign_ins = 0
                published = None
                if self._legacy_metadata(outgoing):
                    response, published = await _vouched(self.context.server_url, response)
                outgoing = await flow.asend(response)
                if published is not None and self.context.oauth_metadata is not None:
                    self.context.oauth_metadata = published
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _legacy_metadata(self, outgoing: httpx2.Request) -> bool:
        """Whether ``outgoing`` reads the authorization server's metadata on the 2025-03-26
        fallback: no protected-resource metadata named one, so it is asked of the MCP
        server's own origin (never when protected-resource metadata named the server: there
        the issuer must be the one named)."""
        server = urlsplit(self.context.server_url)
        root = f"{server.scheme}://{server.netloc}/.well-known/oauth-authorization-server"
        return (
            self.context.auth_server_url is None
            and outgoing.method == "GET"
            and str(outgoing.url) == root
        )

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        if configured := self._access.settings.scope:  # asked for beside the server's own
            metadata = self.context.client_metadata
            metadata.scope = union_scopes(metadata.scope, configured)
        return await super()._perform_authorization_code_grant()

    async def _open(self, link: str) -> None:
        self._sign_ins += 1
        if self._sign_ins > MAX_STEP_UPS:
            raise SignInFailed(
                f"the server asked for a new sign-in {MAX_STEP_UPS} times in a row"
                " (a scope it never grants?)"
            )
        browser = self._access.browser
        if browser is None:
            raise SignInRequired(self._access.server)
        self._authorized = await browser.authorize(link, self._exchange())

    def _exchange(self) -> Exchange | None:
        """What the code's exchange needs, should it come back after a restart."""
        verifier, context = _VERIFIER.get(), self.context
        if verifier is None or context.client_info is None:
            return None
        return {
            "verifier": verifier,
            "server_url": context.server_url,
            "redirect_uri": self._access.redirect_uri,
            "scope": context.client_metadata.scope,
            "protocol_version": context.protocol_version,
            "client": context.client_info.model_dump(mode="json", exclude_none=True),
            "authorization_server": context.oauth_metadata.model_dump(
                mode="json", exclude_none=True
            )
            if context.oauth_metadata
            else None,
            "resource": context.protected_resource_metadata.model_dump(
                mode="json", exclude_none=True
            )
            if context.protected_resource_metadata
            else None,
        }

    async def _back(self) -> AuthorizationCodeResult:
        found, self._authorized = self._authorized, None
        if found is None:
            raise SignInFailed("the sign-in came back with nothing")
        return AuthorizationCodeResult(code=found.code, state=found.state, iss=found.iss)

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        await self._storage.remember(
            self.context.oauth_metadata, self.context.protected_resource_metadata
        )


class _Secret(ClientCredentialsOAuthProvider, _Restored):
    def __init__(self, url: str, access: OAuthAccess, storage: _Storage) -> None:
        config = access.settings
        assert config.client_id is not None and config.client_secret is not None
        method = config.token_endpoint_auth_method
        with warnings.catch_warnings():  # no issuer given: discovery names the server
            warnings.simplefilter("ignore")
            super().__init__(
                url,
                storage,
                config.client_id,
                config.client_secret,
                token_endpoint_auth_method="client_secret_post"
                if method == "client_secret_post"
                else "client_secret_basic",
                scope=config.scope,
            )
        self._storage = storage

    async def _initialize(self) -> None:
        await super()._initialize()
        await self._restore(self, self._storage)


class _SignedJwt(PrivateKeyJWTOAuthProvider, _Restored):
    def __init__(self, url: str, access: OAuthAccess, storage: _Storage) -> None:
        config = access.settings
        assert config.client_id is not None and config.private_key is not None
        signed = SignedJWTParameters(
            issuer=config.client_id,
            subject=config.client_id,
            signing_key=config.private_key,
            signing_algorithm=config.signing_algorithm,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            super().__init__(
                url,
                storage,
                config.client_id,
                signed.create_assertion_provider(),
                scope=config.scope,
            )
        self._storage = storage

    async def _initialize(self) -> None:
        await super()._initialize()
        await self._restore(self, self._storage)


TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


_ERROR_CODE = re.compile(r"[a-z_]{1,40}")
"""An OAuth error code (``invalid_grant``): the one word of a refusal repeated in ours (a
description may repeat the token it refuses)."""


async def _refusal(who: str, response: httpx2.Response) -> SignInFailed:
    """``who`` refused (``the identity provider refused the token exchange``), in words that
    hold the HTTP status and the OAuth error code, never the body."""
    try:
        body = json.loads(await response.aread())
    except ValueError:
        body = None
    said = body.get("error") if isinstance(body, dict) else None
    code = f": {said}" if isinstance(said, str) and _ERROR_CODE.fullmatch(said) else ""
    return SignInFailed(f"{who} (HTTP {response.status_code}{code})")


class _Enterprise(IdentityAssertionOAuthProvider):
    """Enterprise-managed authorization (SEP-990): the configured ID token is exchanged at the
    identity provider for an identity assertion grant (ID-JAG, RFC 8693), which the SDK's
    provider presents to the configured authorization server (RFC 7523 jwt-bearer). A refusal
    of either is a :class:`SignInFailed` with the status and the error code, never the body
    (where a server may repeat the token it refuses)."""

    def __init__(self, url: str, access: OAuthAccess, storage: _Storage) -> None:
        config = access.settings
        assert config.client_id is not None and config.client_secret is not None
        assert config.authorization_server is not None
        issuer = config.authorization_server  # exactly as its metadata names it
        self._config = config
        super().__init__(
            url,
            storage,
            config.client_id,
            config.client_secret,
            issuer,
            self._grant,
            scope=config.scope,
            token_endpoint_auth_method="client_secret_post"
            if config.token_endpoint_auth_method == "client_secret_post"
            else "client_secret_basic",
        )

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow; the authorization server's refusal of the grant in our words."""
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if (
                    outgoing is not request
                    and outgoing.method == "POST"
                    and str(outgoing.url) == self._token_endpoint
                    and response.status_code != 200
                ):
                    raise await _refusal(
                        "the authorization server refused the identity assertion grant", response
                    )
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _grant(self, audience: str, resource: str) -> str:
        """The ID-JAG for ``audience`` (the authorization server) and ``resource`` (the MCP
        server), from the identity provider's token endpoint."""
        config = self._config
        assert config.idp_token_endpoint is not None and config.id_token is not None
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": config.id_token,
            "subject_token_type": ID_TOKEN,
            "requested_token_type": ID_JAG,
            "audience": audience,
            "resource": resource,
        }
        if config.scope:
            form["scope"] = config.scope
        headers: dict[str, str] = {}
        if config.idp_client_id is not None:
            if config.idp_client_secret is not None:
                pair = f"{quote(config.idp_client_id, safe='')}:{quote(config.idp_client_secret, safe='')}"
                headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
            else:
                form["client_id"] = config.idp_client_id
        try:
            async with httpx2.AsyncClient(timeout=30.0) as http:
                answer = await http.post(config.idp_token_endpoint, data=form, headers=headers)
        except httpx2.HTTPError as exc:
            raise SignInFailed(
                f"the identity provider could not be reached ({type(exc).__name__})"
            ) from None
        if answer.status_code != 200:
            raise await _refusal("the identity provider refused the token exchange", answer)
        try:
            body = answer.json()
        except ValueError:
            body = None
        grant = body.get("access_token") if isinstance(body, dict) else None
        issued = body.get("issued_token_type") if isinstance(body, dict) else None
        if issued != ID_JAG or not isinstance(grant, str) or not grant:
            raise SignInFailed("the identity provider did not issue an identity assertion grant")
        return grant


class _Watched(httpx2.Auth):
    """Tells ``failed`` why the sign-in failed: the transport only logs it and closes."""

    requires_response_body = True

    def __init__(self, inner: httpx2.Auth, failed: Callable[[BaseException], None]) -> None:
        self._inner = inner
        self._failed = failed

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self._inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except Exception as exc:
            self._failed(exc)
            raise
        finally:
            await flow.aclose()


class _Quiet(logging.Filter):
    """A missing sign-in is an answer, not a crash: the SDK's tracebacks of it are dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = record.exc_info[1] if record.exc_info else None
        return not isinstance(found, SignInRequired)


_QUIET = _Quiet()
_NOISY = ("mcp.client.auth.oauth2", "mcp.client.streamable_http")


def oauth_auth(
    url: str, access: OAuthAccess, failed: Callable[[BaseException], None]
) -> httpx2.Auth:
    """The ``httpx2.Auth`` that signs every request to ``url`` in (and signs in when needed);
    ``failed`` hears why a sign-in failed."""
    oauth2.PKCEParameters = _Pkce  # type: ignore[misc]
    for name in _NOISY:
        if _QUIET not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_QUIET)
    storage = _Storage(access.slot)
    config = access.settings
    inner: httpx2.Auth
    if config.grant == "enterprise":
        inner = _Enterprise(url, access, storage)
    elif config.grant == "client_credentials":
        inner = (
            _SignedJwt(url, access, storage)
            if config.private_key is not None
            else _Secret(url, access, storage)
        )
    else:
        inner = _CodeFlow(url, access, storage)
    return _Watched(inner, failed)


async def exchange_later(
    exchange: Exchange, authorized: Authorized, slot: Slot, timeout_s: float = 30.0
) -> None:
    """Exchange a sign-in's code for tokens without the flow that made its link (it ended
    with a restart), from what :meth:`_CodeFlow._exchange` kept, and keep them in ``slot``
    as the flow would have: the SDK's own token request, response check and storage."""
    try:
        client = OAuthClientInformationFull.model_validate(exchange["client"])
        found = exchange.get("authorization_server")
        metadata = OAuthMetadata.model_validate(found) if found else None
        found = exchange.get("resource")
        resource = ProtectedResourceMetadata.model_validate(found) if found else None
        asked = OAuthClientMetadata(
            redirect_uris=[AnyUrl(str(exchange["redirect_uri"]))], scope=exchange.get("scope")
        )
        verifier, url = str(exchange["verifier"]), str(exchange["server_url"])
    except (KeyError, ValidationError) as exc:
        raise SignInFailed(f"the sign-in kept for after a restart is unreadable: {exc}") from None
    storage = _Storage(slot)
    flow = OAuthClientProvider(url, asked, storage)
    context = flow.context
    context.client_info = client
    context.oauth_metadata = metadata
    context.protected_resource_metadata = resource
    context.protocol_version = exchange.get("protocol_version")
    try:
        validate_authorization_response_iss(authorized.iss, metadata)
        request = await flow._exchange_token_authorization_code(authorized.code, verifier)
        async with httpx2.AsyncClient(timeout=timeout_s) as http:
            response = await http.send(request)
            await flow._handle_token_response(response)
    except SignInFailed:
        raise
    except Exception as exc:
        raise SignInFailed(described(exc)) from exc
    await storage.set_client_info(client)
    await storage.remember(metadata, resource)


def described(exc: BaseException) -> str:
    """A sign-in's failure in words."""
    if isinstance(exc, SignInFailed):
        return str(exc)
    text = str(exc) or type(exc).__name__
    return f"the sign-in failed: {text[:300]}"


async def revoke(slot: Slot, timeout_s: float = 30.0) -> str:
    """Revoke the sign-in kept in ``slot`` where its authorization server offers revocation
    (RFC 7009: the refresh token, then the access token), and forget it. Says what was done."""
    record = await slot.read()
    if not record or not record.get("tokens"):
        await slot.erase()
        return "no sign-in was kept"
    server = record.get("authorization_server") or {}
    endpoint = server.get("revocation_endpoint") if isinstance(server, dict) else None
    said = "the authorization server offers no revocation: the tokens are deleted here only"
    if isinstance(endpoint, str):
        said = await _revoke_at(endpoint, record, timeout_s)
    await slot.erase()
    return said


async def _revoke_at(endpoint: str, record: Record, timeout_s: float) -> str:
    tokens = record.get("tokens") or {}
    client = record.get("client") or {}
    data: dict[str, str] = {}
    headers: dict[str, str] = {}
    client_id = client.get("client_id")
    secret = client.get("client_secret")
    if isinstance(client_id, str):
        if isinstance(secret, str) and client.get("token_endpoint_auth_method") != (
            "client_secret_post"
        ):
            pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
        else:
            data["client_id"] = client_id
            if isinstance(secret, str):
                data["client_secret"] = secret
    refused: list[str] = []
    async with httpx2.AsyncClient(timeout=timeout_s) as http:
        for kind in ("refresh_token", "access_token"):
            token = tokens.get(kind)
            if not isinstance(token, str):
                continue
            form = {**data, "token": token, "token_type_hint": kind}
            try:
                answer = await http.post(endpoint, data=form, headers=headers)
            except httpx2.HTTPError as exc:
                refused.append(f"{kind.replace('_', ' ')}: {type(exc).__name__}")
                continue
            if answer.status_code != 200:
                refused.append(f"{kind.replace('_', ' ')}: HTTP {answer.status_code}")
    if refused:
        return (
            f"the authorization server did not confirm the revocation ({'; '.join(refused)}):"
            " the tokens are deleted here"
        )
    return "revoked at the authorization server, and deleted here"
