"""The SQLite store's sign-ins waited for in threads: one row per link, used once."""

from __future__ import annotations

from collections.abc import Sequence

from bot.mcp.sign_in_waits import SignInWait
from bot.storage.sqlite.db import Db

_COLUMNS = (
    "wait_id, server, person_id, person_name, key, call_id, sealed, created_at, expires_at,"
    " used_at, owner, handed, taken_at"
)
KEPT_S = 86_400.0
"""A wait expired this long before a new one is made goes."""


class SignInWaitTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def add_sign_in_wait(self: Db, wait: SignInWait) -> None:
        w = wait
        async with self.transaction() as db:
            await db.execute(
                "DELETE FROM mcp_sign_in_waits WHERE expires_at < ?", (w.created_at - KEPT_S,)
            )
            await db.execute(
                f"INSERT INTO mcp_sign_in_waits ({_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (wait_id) DO NOTHING",
                (
                    w.wait_id,
                    w.server,
                    w.person_id,
                    w.person_name,
                    w.key,
                    w.call_id,
                    w.sealed,
                    w.created_at,
                    w.expires_at,
                    w.used_at,
                    w.owner,
                    w.handed,
                    w.taken_at,
                ),
            )

    async def get_sign_in_wait(self: Db, wait_id: str) -> SignInWait | None:
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM mcp_sign_in_waits WHERE wait_id = ?", (wait_id,)
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else _wait(tuple(row))

    async def use_sign_in_wait(self: Db, wait_id: str, now: float) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = ?"
                " WHERE wait_id = ? AND used_at IS NULL AND expires_at > ?",
                (now, wait_id, now),
            )
            return cursor.rowcount == 1

    async def end_sign_in_wait(self: Db, wait_id: str, now: float) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = ? WHERE wait_id = ? AND used_at IS NULL",
                (now, wait_id),
            )
            return cursor.rowcount == 1

    async def hand_sign_in_wait(self: Db, wait_id: str, handed: str, now: float) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET handed = ? WHERE wait_id = ? AND handed IS NULL"
                " AND used_at IS NULL AND expires_at > ?",
                (handed, wait_id, now),
            )
            return cursor.rowcount == 1

    async def take_sign_in_wait(self: Db, wait_id: str, owner: str, now: float) -> str | None:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = ?, taken_at = ? WHERE wait_id = ?"
                " AND owner = ? AND handed IS NOT NULL AND used_at IS NULL RETURNING handed",
                (now, now, wait_id, owner),
            )
            row = await cursor.fetchone()
        return None if row is None else str(row[0])

    async def release_sign_in_wait(self: Db, wait_id: str, owner: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "UPDATE mcp_sign_in_waits SET owner = '' WHERE wait_id = ? AND owner = ?",
                (wait_id, owner),
            )

    async def sign_in_waits_for(self: Db, key: str, call_ids: Sequence[str]) -> list[SignInWait]:
        if not call_ids:
            return []
        marks = ", ".join("?" for _ in call_ids)
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM mcp_sign_in_waits WHERE key = ? AND call_id IN ({marks})"
            " ORDER BY created_at, wait_id",
            (key, *call_ids),
        ) as cur:
            rows = await cur.fetchall()
        return [_wait(tuple(row)) for row in rows]


def _wait(row: tuple[object, ...]) -> SignInWait:
    wait_id, server, person_id, person_name, key, call_id, sealed, made, expires, used = row[:10]
    owner, handed, taken = row[10:]
    return SignInWait(
        wait_id=str(wait_id),
        server=str(server),
        person_id=str(person_id),
        person_name=str(person_name),
        key=str(key),
        call_id=str(call_id),
        sealed=str(sealed),
        created_at=float(made),  # type: ignore[arg-type]
        expires_at=float(expires),  # type: ignore[arg-type]
        used_at=None if used is None else float(used),  # type: ignore[arg-type]
        owner=str(owner),
        handed=None if handed is None else str(handed),
        taken_at=None if taken is None else float(taken),  # type: ignore[arg-type]
    )
