"""Threadline's MCP client (``threadline mcp try``, the real program) against the official MCP
conformance suite's client scenarios, one at a time.

Each scenario is listed here by name: those that pass, with the number of checks each passes,
and those Threadline does not support yet, marked as expected failures (strict: one that
starts passing fails here too, so that it moves to the passing list).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp_conformance.suite import Suite, Unreachable, install, run, scenarios

pytestmark = pytest.mark.timeout(300)  # the first run installs the suite and Node.js with npm

PASSING = {
    "initialize": 1,
    "tools_call": 1,
    "sse-retry": 3,
    "elicitation-sep1034-client-defaults": 5,
    "auth/resource-mismatch": 1,  # it signs in nowhere, so never to the wrong resource
}
"""Each scenario that passes, and how many of its checks pass (none fails or warns)."""
OAUTH = "OAuth sign-in is not supported yet (servers are signed in to with static headers)"
UNSUPPORTED = {
    **{
        f"auth/{name}": OAUTH
        for name in (
            "metadata-default",
            "metadata-var1",
            "metadata-var2",
            "metadata-var3",
            "basic-cimd",
            "scope-from-www-authenticate",
            "scope-from-scopes-supported",
            "scope-omitted-when-undefined",
            "scope-step-up",
            "scope-retry-limit",
            "token-endpoint-auth-basic",
            "token-endpoint-auth-post",
            "token-endpoint-auth-none",
            "pre-registration",
            "2025-03-26-oauth-metadata-backcompat",
            "2025-03-26-oauth-endpoint-fallback",
            "offline-access-scope",
            "offline-access-not-supported",
            "client-credentials-jwt",
            "client-credentials-basic",
            "cross-app-access-complete-flow",
        )
    },
}
"""Each scenario not supported yet, and why."""


@pytest.fixture(scope="module")
def suite() -> Iterator[Suite]:
    try:
        yield install()
    except Unreachable as exc:
        pytest.skip(f"the MCP conformance suite cannot be installed here: {exc}")


def test_every_scenario_of_the_suite_is_listed_here(suite: Suite) -> None:
    assert sorted(scenarios(suite)) == sorted([*PASSING, *UNSUPPORTED])


@pytest.mark.parametrize("scenario", sorted(PASSING))
def test_a_scenario_that_passes(suite: Suite, scenario: str, tmp_path: Path) -> None:
    outcome = run(suite, scenario, tmp_path)
    assert (outcome.passed, outcome.failed, outcome.warnings) == (PASSING[scenario], 0, 0), (
        outcome.output
    )
    assert outcome.ok, outcome.output


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=why))
        for name, why in sorted(UNSUPPORTED.items())
    ],
)
def test_a_scenario_not_supported_yet(suite: Suite, scenario: str, tmp_path: Path) -> None:
    outcome = run(suite, scenario, tmp_path)
    assert outcome.ok, outcome.output
