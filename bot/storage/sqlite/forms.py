"""The SQLite store's forms shown in threads: one row per form, closed once."""

from __future__ import annotations

from bot.mcp.asking import Answer
from bot.mcp.form_rows import COLUMNS, KEPT_S, FormRow, answer_json
from bot.mcp.pending import FormStatus
from bot.storage.sqlite.db import Db

_WAITING = FormStatus.WAITING.value


class FormTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def add_form(self: Db, row: FormRow) -> None:
        r = row
        async with self.transaction() as db:
            await db.execute("DELETE FROM mcp_forms WHERE expires_at < ?", (r.created_at - KEPT_S,))
            await db.execute(
                f"INSERT INTO mcp_forms ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (form_id) DO NOTHING",
                r.values(),
            )

    async def get_form(self: Db, form_id: str) -> FormRow | None:
        async with self.db.execute(
            f"SELECT {COLUMNS} FROM mcp_forms WHERE form_id = ?", (form_id,)
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else FormRow.read(tuple(row))

    async def set_form_card(self: Db, form_id: str, card_id: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "UPDATE mcp_forms SET card_id = ? WHERE form_id = ?", (card_id, form_id)
            )

    async def close_form(
        self: Db, form_id: str, status: FormStatus, answer: Answer | None, now: float | None
    ) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_forms SET status = ?, answer = ?"
                " WHERE form_id = ? AND status = ? AND (? IS NULL OR expires_at > ?)",
                (status.value, answer_json(answer), form_id, _WAITING, now, now),
            )
            return cursor.rowcount == 1

    async def take_form_answer(self: Db, form_id: str) -> FormRow | None:
        async with self.transaction() as db:
            async with db.execute(
                f"SELECT {COLUMNS} FROM mcp_forms WHERE form_id = ?", (form_id,)
            ) as cur:
                row = await cur.fetchone()
            if row is not None and row[8] is not None:
                await db.execute("UPDATE mcp_forms SET answer = NULL WHERE form_id = ?", (form_id,))
        return None if row is None else FormRow.read(tuple(row))

    async def stop_forms_of(self: Db, owner: str) -> int:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_forms SET status = ? WHERE owner = ? AND status = ?",
                (FormStatus.STOPPED.value, owner, _WAITING),
            )
            await db.execute(
                "UPDATE mcp_forms SET answer = NULL WHERE owner = ? AND answer IS NOT NULL",
                (owner,),
            )
            return cursor.rowcount
