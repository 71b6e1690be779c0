"""asyncpg or psycopg 3 for the PostgreSQL store: the store's hot path on each driver.

On a fresh database of the local server (created for the run, dropped at the end), through a
pool of each driver, with the store's own tables and message bodies as the engine writes them:

1. append: one transaction that upserts the session row and inserts one message (what every
   model round trip and tool result costs the store); psycopg also in pipeline mode (the
   statements sent without waiting for each answer), asyncpg also as the store does it: one
   statement, the upsert a data-modifying ``WITH`` of the insert (one round trip, no BEGIN);
2. load: the session row and a transcript of 200 messages (~67 KiB), read back as text.

Each is run with the bodies in ``text`` and in ``jsonb`` columns. Figures: wall time per
operation (p50, p95) and this process's CPU time per operation (the driver's own cost: the
server is another process).

    python bench/pg_driver.py [--rounds 400] [--url postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import psycopg
from psycopg_pool import AsyncConnectionPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine import history
from bench.stats import percentile
from bot.llm.messages import dump_message

SCHEMA = """
CREATE TABLE sessions_{kind} (
    key text PRIMARY KEY, todos {kind} NOT NULL, usage {kind} NOT NULL, cost_usd double precision,
    state text NOT NULL, panel {kind}, created_at double precision, updated_at double precision,
    inbox {kind} NOT NULL, day text NOT NULL, day_tokens bigint NOT NULL,
    day_cost_usd double precision NOT NULL);
CREATE TABLE messages_{kind} (key text, seq integer, body {kind} NOT NULL, PRIMARY KEY (key, seq));
"""
UPSERT = (
    "INSERT INTO sessions_{kind} (key, todos, usage, cost_usd, state, panel, created_at,"
    " updated_at, inbox, day, day_tokens, day_cost_usd)"
    " VALUES ($1, $2::{kind}, $3::{kind}, $4, $5, $6::{kind}, $7, $8, $9::{kind}, $10, $11, $12)"
    " ON CONFLICT (key) DO UPDATE SET todos = excluded.todos, usage = excluded.usage,"
    " cost_usd = excluded.cost_usd, state = excluded.state, panel = excluded.panel,"
    " updated_at = excluded.updated_at, inbox = excluded.inbox, day = excluded.day,"
    " day_tokens = excluded.day_tokens, day_cost_usd = excluded.day_cost_usd"
)
INSERT = "INSERT INTO messages_{kind} (key, seq, body) VALUES ($1, $2, $3::{kind})"
ONE_INSERT = "INSERT INTO messages_{kind} (key, seq, body) VALUES ($1, $13, $14::{kind})"
ROW = (
    "SELECT todos::text, usage::text, cost_usd, state, panel::text, created_at, updated_at,"
    " inbox::text, day, day_tokens, day_cost_usd FROM sessions_{kind} WHERE key = $1"
)
BODIES = "SELECT body::text FROM messages_{kind} WHERE key = $1 ORDER BY seq"

BODY_TEXTS = [dump_message(m) for m in history(200)]


def state(key: str, n: int) -> tuple[Any, ...]:
    todos = '[{"content": "look at the logs", "status": "in_progress"}]'
    usage = '{"prompt_tokens": 12000, "completion_tokens": 300, "cached_tokens": 0}'
    panel = '{"message_id": "M1", "content_hash": "abc", "pinned": true}'
    return (key, todos, usage, 0.01, "running", panel, 1.0, float(n), "[]", "2026-01-02", n, 0.01)


def psycopg_sql(sql: str) -> str:
    """The same statement with psycopg's placeholders."""
    for i in range(12, 0, -1):
        sql = sql.replace(f"${i}", "%s")
    return sql


class Timed:
    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    async def run(self, rounds: int, op: Callable[[int], Awaitable[None]]) -> Timed:
        for n in range(rounds):
            cpu, wall = time.process_time(), time.perf_counter()
            await op(n)
            self.wall.append((time.perf_counter() - wall) * 1000)
            self.cpu.append((time.process_time() - cpu) * 1e6)
        return self

    def line(self, name: str) -> str:
        wall, cpu = self.wall[WARM_UP:], self.cpu[WARM_UP:]
        return (
            f"  {name:<40} p50 {statistics.median(wall):6.3f} ms  p95 {percentile(wall, 0.95):6.3f} ms"
            f"   CPU {statistics.mean(cpu):6.0f} us/op"
        )


WARM_UP = 20


async def with_asyncpg(url: str, kind: str, rounds: int) -> list[str]:
    pool = await asyncpg.create_pool(url, min_size=2, max_size=2)
    upsert, insert = UPSERT.format(kind=kind), INSERT.format(kind=kind)
    row, bodies = ROW.format(kind=kind), BODIES.format(kind=kind)
    one = f"WITH saved AS ({upsert}) {ONE_INSERT.format(kind=kind)}"

    async def append(n: int) -> None:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(upsert, *state("apg:a", n))
            await conn.execute(insert, "apg:a", n, BODY_TEXTS[n % 200])

    async def append_one_statement(n: int) -> None:
        await pool.execute(one, *state("apg:o", n), n, BODY_TEXTS[n % 200])

    async def load(n: int) -> None:
        async with pool.acquire() as conn:
            await conn.fetchrow(row, "apg:l")
            texts = [r[0] for r in await conn.fetch(bodies, "apg:l")]
            assert len(texts) == 200

    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(upsert, *state("apg:l", 0))
        await conn.executemany(insert, [("apg:l", i, b) for i, b in enumerate(BODY_TEXTS)])
    lines = [
        (await Timed().run(rounds, append)).line(f"asyncpg  {kind:<5} append"),
        (await Timed().run(rounds, append_one_statement)).line(
            f"asyncpg  {kind:<5} append (one statement)"
        ),
        (await Timed().run(rounds, load)).line(f"asyncpg  {kind:<5} load 200"),
    ]
    await pool.close()
    return lines


async def with_psycopg(url: str, kind: str, rounds: int) -> list[str]:
    pool = AsyncConnectionPool(url, min_size=2, max_size=2, open=False)
    await pool.open(wait=True)
    upsert, insert = psycopg_sql(UPSERT.format(kind=kind)), psycopg_sql(INSERT.format(kind=kind))
    row, bodies = psycopg_sql(ROW.format(kind=kind)), psycopg_sql(BODIES.format(kind=kind))

    async def append(n: int) -> None:
        async with pool.connection() as conn, conn.transaction():
            await conn.execute(upsert, state("pg:a", n))
            await conn.execute(insert, ("pg:a", n, BODY_TEXTS[n % 200]))

    async def append_pipelined(n: int) -> None:
        async with pool.connection() as conn, conn.pipeline(), conn.transaction():
            await conn.execute(upsert, state("pg:p", n))
            await conn.execute(insert, ("pg:p", n, BODY_TEXTS[n % 200]))

    async def load(n: int) -> None:
        async with pool.connection() as conn:
            await (await conn.execute(row, ("pg:l",))).fetchone()
            texts = [r[0] for r in await (await conn.execute(bodies, ("pg:l",))).fetchall()]
            assert len(texts) == 200

    async with pool.connection() as conn, conn.transaction():
        await conn.execute(upsert, state("pg:l", 0))
        async with conn.cursor() as cur:
            await cur.executemany(insert, [("pg:l", i, b) for i, b in enumerate(BODY_TEXTS)])
    lines = [
        (await Timed().run(rounds, append)).line(f"psycopg  {kind:<5} append"),
        (await Timed().run(rounds, append_pipelined)).line(f"psycopg  {kind:<5} append (pipeline)"),
        (await Timed().run(rounds, load)).line(f"psycopg  {kind:<5} load 200"),
    ]
    await pool.close()
    return lines


async def main(url: str, rounds: int) -> None:
    name = f"threadline_bench_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    db_url = url.rsplit("/", 1)[0] + f"/{name}"
    try:
        setup = await asyncpg.connect(db_url)
        for kind in ("text", "jsonb"):
            await setup.execute(SCHEMA.format(kind=kind))
        await setup.close()
        size = sum(len(b) for b in BODY_TEXTS)
        print(
            f"{rounds} operations each ({WARM_UP} warm-up left out), pools of 2 connections, "
            f"local server over TCP; transcript of 200 messages = {size / 1024:.0f} KiB; "
            f"asyncpg {asyncpg.__version__}, psycopg {psycopg.__version__}:"
        )
        for kind in ("text", "jsonb"):
            for line in await with_asyncpg(db_url, kind, rounds):
                print(line, flush=True)
            for line in await with_psycopg(db_url, kind, rounds):
                print(line, flush=True)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    asyncio.run(main(args.url, args.rounds))
