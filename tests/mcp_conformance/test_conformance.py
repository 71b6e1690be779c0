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
    "auth/metadata-default": 12,
    "auth/metadata-var1": 12,
    "auth/metadata-var2": 12,
    "auth/metadata-var3": 12,
    "auth/basic-cimd": 12,
    "auth/scope-from-www-authenticate": 13,
    "auth/scope-from-scopes-supported": 13,
    "auth/scope-omitted-when-undefined": 13,
    "auth/scope-step-up": 20,
    "auth/scope-retry-limit": 10,
    "auth/token-endpoint-auth-basic": 17,
    "auth/token-endpoint-auth-post": 17,
    "auth/token-endpoint-auth-none": 17,
    "auth/pre-registration": 12,
    "auth/2025-03-26-oauth-endpoint-fallback": 6,
    "auth/2025-03-26-oauth-metadata-backcompat": 11,
    "auth/cross-app-access-complete-flow": 8,
    "auth/resource-mismatch": 2,
    "auth/offline-access-scope": 12,
    "auth/offline-access-not-supported": 13,
    "auth/client-credentials-jwt": 7,
    "auth/client-credentials-basic": 7,
    "elicitation-sep1034-client-defaults": 5,
}
"""Each scenario that passes, and how many of its checks pass (none fails or warns)."""
UNSUPPORTED: dict[str, str] = {}
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
