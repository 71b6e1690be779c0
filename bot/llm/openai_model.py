"""The model on any OpenAI-compatible Chat Completions endpoint; the one module importing ``openai``.

The request body is built by :class:`bot.llm.wire.WireEncoder` and sent as JSON bytes through the
client's lower-level ``post`` (authentication, headers, SSE parsing and HTTP errors stay the
client's; its per-call transformation of every message is skipped, which costs tens of
milliseconds on a long thread). Chunks are read as plain JSON and turned into
:mod:`bot.llm.model` pieces. With ``api="responses"`` the same goes through OpenAI's Responses
API (``/responses``; body and events in :mod:`bot.llm.responses_wire`).

Retries are ours (the client's own are off): a retryable failure is retried with
:class:`bot.llm.retry.Backoff` only while nothing has been yielded; after the first piece, a
failure is raised as it is, because the thread already shows part of the answer.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx2
import openai
from openai import AsyncStream

from bot.config import Settings
from bot.errors import (
    ContextOverflow,
    ModelError,
    ModelRateLimited,
    ModelRejected,
    ModelServerError,
    ModelStreamBroken,
    ModelUnavailable,
)
from bot.infra.clock import Clock
from bot.infra.text import valid_text
from bot.llm import responses_wire
from bot.llm.demo import DEMO_BASE_URL, DEMO_LABEL, DEMO_MODEL, DemoTransport
from bot.llm.messages import Usage
from bot.llm.model import (
    FinishPiece,
    ModelPiece,
    ModelRequest,
    TextPiece,
    ThinkingPiece,
    ToolCallPiece,
    UsagePiece,
    WaitPiece,
)
from bot.llm.retry import Backoff, retry_after_from_headers
from bot.llm.routing import OPENAI_BASE_URL, Route, RoutedModel, routed
from bot.llm.unreachable import chain, unreachable_reason
from bot.llm.wire import WireEncoder

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
# typed loosely: the client's RequestOptions TypedDict lives in a private module
_REQUEST_OPTIONS: Any = {
    "headers": {"Content-Type": "application/json"},
    "security": {"bearer_auth": True},
}
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long", re.I
)
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_*.-]{4,})")
_MAX_SERVER_TEXT = 300

OnRetry = Callable[[ModelError, int, float], None]
"""Told of each retry: the error, the retry's number (1 for the first) and the delay before it."""


class OpenAIModel:
    """A streamed Chat Completions model behind ``openai.AsyncOpenAI``."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str,
        clock: Clock,
        backoff: Backoff,
        timeout_s: float = 120.0,
        label: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        max_tokens_field: str = "max_tokens",
        key_name: str = "OPENAI_API_KEY",
        url_name: str = "OPENAI_BASE_URL",
        api: Literal["chat", "responses"] = "chat",
        on_retry: OnRetry | None = None,
    ) -> None:
        self._model = model
        self._api = api
        self._on_retry = on_retry
        self._plain: set[str] = set()
        """Models that refused to return reasoning (Responses API): asked without it."""
        self._key_name, self._url_name = key_name, url_name
        self._label = label or model
        self._clock = clock
        self._backoff = backoff
        self._max_tokens_field = max_tokens_field
        self._secret = api_key
        self._where = safe_url(base_url)
        self._timeout_s = timeout_s
        self._encoder = WireEncoder()
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=httpx2.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S)),
            http_client=http_client or _http_client(base_url),
        )

    @property
    def name(self) -> str:
        return self._model

    @property
    def label(self) -> str:
        return self._label

    async def aclose(self) -> None:
        await self._client.close()

    def request_body(self, request: ModelRequest) -> bytes:
        """The exact JSON body :meth:`stream` sends for ``request``."""
        name = request.model or self._model
        if self._api == "responses":
            return responses_wire.request_body(name, request, reasoning=name not in self._plain)
        return self._encoder.body(name, request, max_tokens_field=self._max_tokens_field)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        body = self.request_body(request)
        name = request.model or self._model
        retry = 0
        while True:
            yielded = False
            try:
                async with aclosing(self._attempt(body, name)) as pieces:
                    async for piece in pieces:
                        yielded = True
                        yield piece
                return
            except ModelError as exc:
                retry += 1
                delay = None if yielded else self._backoff.delay(retry, exc)
                if delay is None:
                    raise
                self._retrying(exc, retry, delay)
                if exc.retry_after is not None:  # the server's own figure: the thread is told
                    yield WaitPiece(delay)
                await self._clock.sleep(delay)

    def _retrying(self, error: ModelError, retry: int, delay: float) -> None:
        """Tell ``on_retry``, or else log a warning."""
        if self._on_retry is not None:
            self._on_retry(error, retry, delay)
            return
        log.warning(
            "model call failed (%s); retry %d of %d in %.2fs",
            error,
            retry,
            self._backoff.max_retries,
            delay,
        )

    async def _attempt(self, body: bytes, name: str) -> AsyncGenerator[ModelPiece, None]:
        """One HTTP request: its pieces, or a :class:`ModelError`."""
        try:
            response = await self._post(body, name)
        except openai.APIStatusError as exc:
            raise self._status_error(exc, name) from None
        except openai.APIConnectionError as exc:
            raise self._connection_error(exc) from None
        except openai.OpenAIError as exc:
            raise ModelError(self._scrub(str(exc))) from None
        reader = responses_wire.EventReader() if self._api == "responses" else ChunkReader()
        try:
            async for chunk in response:
                for piece in reader.read(chunk):
                    yield piece
        except ValueError:  # a chunk that is not JSON
            raise _invalid("a chunk was not JSON") from None
        except openai.APIConnectionError as exc:
            if not reader.finished:
                raise ModelStreamBroken(self._cut_off(exc)) from None
            log.info("the stream broke after its finish reason; keeping the answer")
        except openai.APIError as exc:  # an error event inside the stream
            raise self._stream_error(exc) from None
        except responses_wire.ResponseFailed as exc:
            raise self._failure(exc.code, self._scrub(exc.message)) from None
        finally:
            await response.close()
        if not reader.finished:
            raise _ended_early(reader.chunks, response.response.headers.get("content-type", ""))

    async def _post(self, body: bytes, name: str) -> AsyncStream[object]:
        """The streamed response to ``body``; on the Responses API, asked again at once without
        reasoning for a model that refuses it (remembered for its later requests)."""
        for attempt in (body, None):
            path = "/responses" if self._api == "responses" else "/chat/completions"
            try:
                return await self._client.post(
                    path,
                    cast_to=object,
                    content=attempt or responses_wire.without_reasoning(body),
                    options=_REQUEST_OPTIONS,
                    stream=True,
                    stream_cls=AsyncStream[object],
                )
            except openai.APIStatusError as exc:
                refused = responses_wire.reasoning_refused(exc.status_code, exc.body)
                if attempt is None or self._api != "responses" or not refused:
                    raise
                log.info("%s does not return reasoning; asking without it", name)
                self._plain.add(name)
        raise AssertionError("unreachable")

    # --- errors: plain words, no secrets ---

    def _scrub(self, text: str) -> str:
        text = valid_text(text)
        if self._secret:
            text = text.replace(self._secret, "[redacted]")
        text = _KEY_LIKE.sub("[redacted]", text)
        if len(text) > _MAX_SERVER_TEXT:
            text = text[: _MAX_SERVER_TEXT - 1] + "…"
        return text

    def _server_text(self, exc: openai.APIError) -> str:
        body = exc.body
        message = body.get("message") if isinstance(body, Mapping) else None
        if not isinstance(message, str) or not message:
            message = exc.message
        return self._scrub(message)

    def _status_error(self, exc: openai.APIStatusError, name: str) -> ModelError:
        status = exc.status_code
        said = self._server_text(exc)
        if status == 429 and exc.code == "insufficient_quota":
            return ModelRejected(
                f"the account behind {self._key_name} has no quota left (HTTP 429): {said}",
                status=status,
            )
        if status == 429:
            wait = retry_after_from_headers(exc.response.headers, now=self._clock.now())
            return ModelRateLimited(
                f"the model server is rate-limiting requests: {said}", retry_after=wait
            )
        if status >= 500:
            return ModelServerError(
                f"the model server failed (HTTP {status}): {said}",
                status=status,
                retry_after=retry_after_from_headers(exc.response.headers, now=self._clock.now()),
            )
        if status == 408:
            return ModelUnavailable(
                f"the model server timed out the request (HTTP 408) at {self._where}", status=status
            )
        if exc.code == "context_length_exceeded" or _CONTEXT_WORDS.search(said):
            return ContextOverflow(
                f"the conversation is longer than the model's context window: {said}", status=status
            )
        return ModelRejected(self._rejection(status, said, name), status=status)

    def _rejection(self, status: int, said: str, name: str) -> str:
        if status == 401:
            return (
                f"the model server at {self._where} refused the API key (HTTP 401). "
                f"Check {self._key_name}."
            )
        if status == 403:
            return (
                f"the API key may not use the model {name!r} (HTTP 403). "
                f"Check {self._key_name} and {self._model_setting(name)}."
            )
        if status == 404:
            return (
                f"the model server at {self._where} does not know the model {name!r} "
                f"(HTTP 404). Check {self._model_setting(name)}, and {self._url_name} if you set it."
            )
        return f"the model server rejected the request (HTTP {status}): {said}"

    def _model_setting(self, name: str) -> str:
        """Where the model's name was set."""
        if name == self._model:
            return "THREADLINE_MODEL"
        return "the model chosen for this thread (/threadline model) or its channel"

    def _connection_error(self, exc: openai.APIConnectionError) -> ModelUnavailable:
        """The real reason from the cause chain: the client reports a refused connection or a
        failed name lookup as a timeout when it goes through its aiohttp transport."""
        reason = unreachable_reason(exc, urlsplit(self._where).hostname or self._where)
        if reason is not None:
            return ModelUnavailable(
                f"could not reach the model server at {self._where}: {self._scrub(reason)}"
            )
        if any(isinstance(link, httpx2.ConnectTimeout) for link in chain(exc)):
            connect_s = min(self._timeout_s, CONNECT_TIMEOUT_S)
            return ModelUnavailable(
                f"the model server at {self._where} did not accept a connection within "
                f"{connect_s:g}s"
            )
        if isinstance(exc, openai.APITimeoutError):
            return ModelUnavailable(
                f"the model server at {self._where} did not answer within {self._timeout_s:g}s"
            )
        cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "connection error"
        return ModelUnavailable(f"could not reach the model server at {self._where} ({cause})")

    def _cut_off(self, exc: openai.APIConnectionError) -> str:
        if isinstance(exc, openai.APITimeoutError):
            return (
                f"the model's answer stalled for more than {self._timeout_s:g}s and was abandoned"
            )
        return "the connection to the model server broke in the middle of the answer"

    def _stream_error(self, exc: openai.APIError) -> ModelError:
        return self._failure(exc.code, self._server_text(exc))

    def _failure(self, code: str | None, said: str) -> ModelError:
        """An error the server reported after its answer began."""
        if code == "context_length_exceeded" or _CONTEXT_WORDS.search(said):
            return ContextOverflow(
                f"the conversation is longer than the model's context window: {said}"
            )
        return ModelServerError(f"the model server reported an error during the answer: {said}")


class ChunkReader:
    """Answers ``chat.completion.chunk`` objects (plain JSON) into pieces.

    Servers differ in what their chunks hold (see ``tests/fakes/streams/``): usage in a chunk of
    its own with no choices or beside the finish reason, a tool call whole in one delta or in
    fragments, its ``index`` left out, its ``id`` on the first fragment only, on each, or
    ``null``, ``finish_reason`` as ``null`` until the last chunk or a server's own word
    (``eos``), the older ``function_call`` delta. All read as the same pieces.
    """

    def __init__(self) -> None:
        self.finished = False
        self._calls = CallNumbers()
        self.chunks = 0

    def read(self, chunk: object) -> list[ModelPiece]:
        self.chunks += 1
        if not isinstance(chunk, dict):
            raise _invalid("a chunk was not an object")
        pieces: list[ModelPiece] = []
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise _invalid("a chunk had malformed choices")
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
                self._choice(choice, pieces)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            pieces.append(UsagePiece(_usage(usage)))
        return pieces

    def _choice(self, choice: dict[str, Any], pieces: list[ModelPiece]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            if (reasoned := _reasoning(delta)) is not None:
                pieces.append(reasoned)
            for key in ("content", "refusal"):
                text = delta.get(key)
                if isinstance(text, str) and text:
                    pieces.append(TextPiece(text))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                pieces.extend(
                    self._call_piece(position, call) for position, call in enumerate(calls)
                )
            function = delta.get("function_call")
            if isinstance(function, dict):
                pieces.append(self._call_piece(None, {"function": function}))
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.finished = True
            pieces.append(FinishPiece(reason))

    def _call_piece(self, position: int | None, call: object) -> ToolCallPiece:
        if not isinstance(call, dict):
            raise _invalid("a tool call was malformed")
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        index = call.get("index")
        call_id = _text_or_none(call.get("id"))
        name = _text_or_none(function.get("name"))
        arguments = function.get("arguments")
        where: object = index if isinstance(index, int) else position
        return ToolCallPiece(
            index=self._calls.number(where, call_id, name),
            id=call_id,
            name=name,
            arguments=arguments if isinstance(arguments, str) else "",
        )


class CallNumbers:
    """Numbers the tool calls of one answer: by the ``index`` the server gives (its position
    in the delta's list when it gives none), except that a fragment with a name and another id
    than the call at its index holds is a new call (servers that number every call 0)."""

    def __init__(self) -> None:
        self._at: dict[object, tuple[int, str | None]] = {}
        self._count = 0

    def number(self, where: object, call_id: str | None, name: str | None) -> int:
        held = self._at.get(where)
        if held is not None and not (name and call_id and held[1] and call_id != held[1]):
            if call_id and not held[1]:
                self._at[where] = (held[0], call_id)
            return held[0]
        number, self._count = self._count, self._count + 1
        self._at[where] = (number, call_id)
        return number


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _ended_early(chunks: int, content_type: str) -> ModelStreamBroken:
    """A stream that ended without its finish reason after ``chunks`` chunks: cut off, empty,
    or not a stream."""
    if chunks:
        return ModelStreamBroken("the model's answer stopped before it was finished")
    if "event-stream" not in content_type:
        kind = content_type.split(";")[0].strip() or "no content type"
        return _invalid(f"it answered with {kind}, not a stream of events")
    return ModelStreamBroken("the model server sent nothing (an empty stream)", what="empty")


def _invalid(detail: str) -> ModelStreamBroken:
    return ModelStreamBroken(
        f"the model server sent a stream that was not valid ({detail})", what="invalid"
    )


REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where servers stream a model's reasoning (vLLM and DeepSeek: the first; OpenRouter and newer
vLLM: the second; some send both with the same text)."""


def _reasoning(delta: dict[str, Any]) -> ThinkingPiece | None:
    """That the model reasons, and how much: its text goes no further than this function."""
    for key in REASONING_FIELDS:
        text = delta.get(key)
        if isinstance(text, str) and text:
            return ThinkingPiece(len(text))
    return None


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        prompt_tokens=_count(raw.get("prompt_tokens")),
        completion_tokens=_count(raw.get("completion_tokens")),
        cached_tokens=_count(cached),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def safe_url(url: str) -> str:
    """``url`` without credentials, query or fragment, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _http_client(base_url: str) -> httpx2.AsyncClient | None:
    """The client's own aiohttp transport (about a millisecond less per model call than its
    default one, measured by bench/engine.py); the default one for a URL holding credentials,
    which it turns into Basic authentication where aiohttp refuses them."""
    if urlsplit(base_url).username is not None:
        return None
    return openai.DefaultAioHttpClient()


def build_openai_model(
    settings: Settings,
    clock: Clock,
    *,
    rng: random.Random,
    demo_chunk_delay_s: float | None = None,
    on_retry: OnRetry | None = None,
) -> OpenAIModel | RoutedModel:
    """The configured model, routed by model name when ``[per_model]`` or
    ``THREADLINE_FALLBACK_MODELS`` say so (:mod:`bot.llm.routing`). ``on_retry`` is told of each
    retry (when None, a warning is logged)."""
    default = _default_model(
        settings, clock, rng=rng, demo_chunk_delay_s=demo_chunk_delay_s, on_retry=on_retry
    )
    return routed(
        settings, default, lambda route: _route_model(route, settings, clock, rng, on_retry)
    )


def _route_model(
    route: Route,
    settings: Settings,
    clock: Clock,
    rng: random.Random,
    on_retry: OnRetry | None = None,
) -> OpenAIModel:
    """The client of one ``[per_model."NAME"]`` route."""
    official = urlsplit(route.base_url).hostname == "api.openai.com"
    return OpenAIModel(
        route.model,
        api_key=route.api_key,
        base_url=route.base_url,
        clock=clock,
        backoff=Backoff(max_retries=settings.model_max_retries, rng=rng),
        timeout_s=settings.model_timeout_s,
        max_tokens_field="max_completion_tokens" if official else "max_tokens",
        key_name=route.key_name,
        url_name=route.url_name,
        api=route.api,
        on_retry=on_retry,
    )


def _default_model(
    settings: Settings,
    clock: Clock,
    *,
    rng: random.Random,
    demo_chunk_delay_s: float | None = None,
    on_retry: OnRetry | None = None,
) -> OpenAIModel:
    """The default model: the offline demo model when neither ``OPENAI_API_KEY`` nor
    ``OPENAI_BASE_URL`` is set, else the real endpoint."""
    backoff = Backoff(
        max_retries=settings.model_max_retries,
        rng=rng,
        max_retry_after=settings.model_retry_after_max_s,
    )
    if settings.uses_demo_model:
        delay = settings.demo_chunk_delay_s if demo_chunk_delay_s is None else demo_chunk_delay_s
        transport = DemoTransport(chunk_delay_s=delay)
        return OpenAIModel(
            DEMO_MODEL,
            api_key="demo",
            base_url=DEMO_BASE_URL,
            clock=clock,
            backoff=backoff,
            timeout_s=settings.model_timeout_s,
            label=DEMO_LABEL,
            http_client=httpx2.AsyncClient(transport=transport),
            on_retry=on_retry,
        )
    base_url = settings.openai_base_url or OPENAI_BASE_URL
    key = settings.openai_api_key
    official = urlsplit(base_url).hostname == "api.openai.com"
    return OpenAIModel(
        settings.model,
        # servers without authentication (Ollama, vLLM) ignore the placeholder
        api_key=key.get_secret_value() if key is not None else "not-needed",
        base_url=base_url,
        clock=clock,
        backoff=backoff,
        timeout_s=settings.model_timeout_s,
        max_tokens_field="max_completion_tokens" if official else "max_tokens",
        api=settings.openai_api,
        on_retry=on_retry,
    )
