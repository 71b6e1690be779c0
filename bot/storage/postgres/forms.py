"""The PostgreSQL store's forms shown in threads: one row per form, closed once, whichever
worker closes it."""

from __future__ import annotations

from bot.mcp.asking import Answer
from bot.mcp.form_rows import COLUMNS, KEPT_S, FormRow, answer_json
from bot.mcp.pending import FormStatus
from bot.storage.postgres.db import PgDb

_WAITING = FormStatus.WAITING.value


class FormTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def add_form(self: PgDb, row: FormRow) -> None:
        r = row
        async with self.transaction() as db:
            await db.execute("DELETE FROM mcp_forms WHERE expires_at < $1", r.created_at - KEPT_S)
            await db.execute(
                f"INSERT INTO mcp_forms ({COLUMNS})"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
                " ON CONFLICT (form_id) DO NOTHING",
                *r.values(),
            )

    async def get_form(self: PgDb, form_id: str) -> FormRow | None:
        row = await self.pool.fetchrow(
            f"SELECT {COLUMNS} FROM mcp_forms WHERE form_id = $1", form_id
        )
        return None if row is None else FormRow.read(tuple(row))

    async def set_form_card(self: PgDb, form_id: str, card_id: str) -> None:
        await self.pool.execute(
            "UPDATE mcp_forms SET card_id = $1 WHERE form_id = $2", card_id, form_id
        )

    async def close_form(
        self: PgDb, form_id: str, status: FormStatus, answer: Answer | None, now: float | None
    ) -> bool:
        done = await self.pool.execute(
            "UPDATE mcp_forms SET status = $1, answer = $2"
            " WHERE form_id = $3 AND status = $4"
            " AND ($5::double precision IS NULL OR expires_at > $5)",
            status.value,
            answer_json(answer),
            form_id,
            _WAITING,
            now,
        )
        return str(done).endswith(" 1")

    async def take_form_answer(self: PgDb, form_id: str) -> FormRow | None:
        async with self.transaction() as db:
            row = await db.fetchrow(
                f"SELECT {COLUMNS} FROM mcp_forms WHERE form_id = $1 FOR UPDATE", form_id
            )
            if row is not None and row["answer"] is not None:
                await db.execute("UPDATE mcp_forms SET answer = NULL WHERE form_id = $1", form_id)
        return None if row is None else FormRow.read(tuple(row))

    async def stop_forms_of(self: PgDb, owner: str) -> int:
        async with self.transaction() as db:
            done = await db.execute(
                "UPDATE mcp_forms SET status = $1 WHERE owner = $2 AND status = $3",
                FormStatus.STOPPED.value,
                owner,
                _WAITING,
            )
            await db.execute(
                "UPDATE mcp_forms SET answer = NULL WHERE owner = $1 AND answer IS NOT NULL", owner
            )
        return int(str(done).rsplit(" ", 1)[-1])
