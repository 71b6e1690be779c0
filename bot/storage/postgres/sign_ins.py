"""The PostgreSQL store's MCP sign-ins: sealed blobs, each written only over the version its
writer read (:class:`bot.mcp.tokens.SignInKeep`), so workers sharing the database share them."""

from __future__ import annotations

from bot.mcp.tokens import Kept
from bot.storage.postgres.db import PgDb


class SignInTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def sign_in(self: PgDb, server: str, subject: str) -> Kept | None:
        row = await self.pool.fetchrow(
            "SELECT sealed, version FROM mcp_sign_ins WHERE server = $1 AND subject = $2",
            server,
            subject,
        )
        return None if row is None else Kept(bytes(row["sealed"]), int(row["version"]))

    async def keep_sign_in(
        self: PgDb, server: str, subject: str, sealed: bytes, version: int, now: float
    ) -> bool:
        if version == 0:
            status = await self.pool.execute(
                "INSERT INTO mcp_sign_ins (server, subject, sealed, version, updated_at)"
                " VALUES ($1, $2, $3, 1, $4) ON CONFLICT (server, subject) DO NOTHING",
                server,
                subject,
                sealed,
                now,
            )
        else:
            status = await self.pool.execute(
                "UPDATE mcp_sign_ins SET sealed = $1, version = version + 1, updated_at = $2"
                " WHERE server = $3 AND subject = $4 AND version = $5",
                sealed,
                now,
                server,
                subject,
                version,
            )
        return str(status).endswith(" 1")

    async def forget_sign_in(self: PgDb, server: str, subject: str) -> None:
        await self.pool.execute(
            "DELETE FROM mcp_sign_ins WHERE server = $1 AND subject = $2", server, subject
        )

    async def sign_ins(self: PgDb, server: str) -> list[tuple[str, bytes]]:
        rows = await self.pool.fetch(
            "SELECT subject, sealed FROM mcp_sign_ins WHERE server = $1 ORDER BY subject", server
        )
        return [(row["subject"], bytes(row["sealed"])) for row in rows]
