"""A decision of the policy: allowed, or refused with the reason (for logs and the operator;
the person is told in the caller's words)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Verdict:
    reason: str | None = None
    """Why not; None when allowed."""

    @property
    def allowed(self) -> bool:
        return self.reason is None


ALLOWED = Verdict()


def refused(reason: str) -> Verdict:
    return Verdict(reason)
