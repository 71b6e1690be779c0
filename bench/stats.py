"""Small helpers the benchmarks share."""

from __future__ import annotations

import os
import statistics

import asyncpg

POSTGRES = os.environ.get(
    "THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
"""Where the benchmarks on PostgreSQL make their scratch databases (``--postgres``)."""


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p95(values: list[float]) -> float:
    """The 95th percentile of ``values`` (inclusive method; one value is its own)."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[18]


async def admin(url: str, sql: str) -> None:
    """Run one statement on ``url`` (a scratch database or schema made or dropped)."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()
