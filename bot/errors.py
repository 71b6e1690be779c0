"""Threadline's exceptions: one root, kept shallow.

    ThreadlineError
    ├── ConfigError            the operator's configuration is wrong (names the setting)
    ├── ModelError             the model endpoint failed or misbehaved
    │   ├── ModelUnavailable   connection refused, timeout, DNS: nothing answered
    │   ├── ModelRateLimited   429 (retry_after when the server said)
    │   ├── ModelServerError   5xx
    │   ├── ContextOverflow    the request is longer than the model's context window
    │   ├── ModelRejected      another 4xx: bad key, unknown model, bad request
    │   ├── ModelStreamBroken  a stream cut off, not valid, or empty (``what`` says which)
    │   ├── FallbacksFailed    the model and every fallback model failed (says how each did)
    │   └── ModelSilent        nothing came for the first-token timeout (the server hangs)
    ├── SurfaceError           the chat platform refused or failed a call
    │   ├── SurfaceRateLimited 429 (retry_after in seconds)
    │   ├── MessageTooLong     the text is over the platform's limit
    │   ├── EditRefused        this message can no longer be edited (too old, archived)
    │   └── FileRefused        a shared file the bot cannot download, or one over the size cap
    ├── StoreError             the store is unusable (corrupt file, newer schema)
    │   └── LeaseLost          a write under a thread's lease after another worker took it over
    ├── Refused                a request that cannot be done as asked (a schedule's time that
    │                          cannot be read, a limit reached, an unknown id): says why
    └── McpError               an MCP server failed or misbehaved (the message names it)
        ├── McpUnavailable     it did not start, or it died, or its connection closed
        │   └── McpSignInNeeded  it asks for a sign-in the bot does not have (none yet,
        │                        expired or revoked): ``person`` says whose, if one person's
        └── McpTimeout         it did not answer in time

Control signals (a run waiting for approval, a run stopped by a user) are results of the
engine, not exceptions.
"""

from __future__ import annotations

from typing import Literal

StreamFault = Literal["cut_off", "invalid", "empty"]
"""How a model's stream went wrong: it stopped before its end, it held something that is not a
chunk of an answer, or it held nothing at all."""


class ThreadlineError(Exception):
    """Root of every error Threadline raises on purpose."""


class ConfigError(ThreadlineError):
    """The configuration is invalid; ``setting`` names the culprit."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting}: {problem}")
        self.setting = setting
        self.problem = problem


class ModelError(ThreadlineError):
    """The model endpoint failed; ``retryable`` says whether backing off may help."""

    retryable = False

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        """Seconds the server asked us to wait (``Retry-After``), when it said."""


class ModelUnavailable(ModelError):
    retryable = True


class ModelRateLimited(ModelError):
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, status=429, retry_after=retry_after)


class ModelServerError(ModelError):
    retryable = True


class ContextOverflow(ModelError):
    pass


class ModelRejected(ModelError):
    pass


class ModelStreamBroken(ModelError):
    retryable = True

    def __init__(self, message: str, *, what: StreamFault = "cut_off") -> None:
        super().__init__(message)
        self.what: StreamFault = what


class FallbacksFailed(ModelError):
    """No model of the thread's model and its fallbacks could answer; ``failures`` holds each
    model's name and why it did not, in the order they were asked."""

    def __init__(self, failures: tuple[tuple[str, str], ...]) -> None:
        said = "; ".join(f"{name} ({why})" for name, why in failures)
        super().__init__(f"no model could answer: {said}")
        self.failures = failures


class ModelSilent(ModelError):
    """The model sent nothing within the first-token timeout; its message is for people."""


class SurfaceError(ThreadlineError):
    """A chat platform call failed."""


class SurfaceRateLimited(SurfaceError):
    def __init__(self, retry_after: float, message: str = "rate limited") -> None:
        super().__init__(f"{message} (retry after {retry_after:.2f}s)")
        self.retry_after = retry_after


class MessageTooLong(SurfaceError):
    pass


class EditRefused(SurfaceError):
    pass


class FileRefused(SurfaceError):
    """A shared file could not be had; the message says why in words for the thread
    (``the bot's token may not download it``, ``larger than the 20 MB cap``)."""


class StoreError(ThreadlineError):
    pass


class LeaseLost(StoreError):
    """The thread's lease changed hands (or was released): a write with its token is refused."""


class Refused(ThreadlineError):
    """A request from the model or a person that cannot be done as asked; the message says why
    and what would be accepted (a tool turns it into an error result, a command into its answer)."""


class McpError(ThreadlineError):
    """An MCP server answered with an error, or with something that is not MCP."""


class McpUnavailable(McpError):
    pass


class McpSignInNeeded(McpUnavailable):
    def __init__(self, message: str, *, server: str, person: str | None = None) -> None:
        super().__init__(message)
        self.server = server
        self.person = person
        """The person whose sign-in is missing (a per-person server), else None (shared)."""


class McpTimeout(McpError):
    pass
