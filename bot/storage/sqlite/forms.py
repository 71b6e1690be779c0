"""The SQLite store's forms shown in threads: one row per form, closed once."""

from __future__ import annotations

from bot.mcp.asking import Answer
from bot.mcp.form_rows import KEPT_S, FormRow, answer_json, asked_json, read_answer, read_asked
from bot.mcp.pending import FormStatus
from bot.storage.sqlite.db import Db

_COLUMNS = (
    "form_id, key, person_id, person_name, asked, owner, status, card_id, answer, created_at,"
    " expires_at"
)
_WAITING = FormStatus.WAITING.value


class FormTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def add_form(self: Db, row: FormRow) -> None:
        r = row
        async with self.transaction() as db:
            await db.execute("DELETE FROM mcp_forms WHERE expires_at < ?", (r.created_at - KEPT_S,))
            await db.execute(
                f"INSERT INTO mcp_forms ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (form_id) DO NOTHING",
                (
                    r.form_id,
                    r.key,
                    r.person_id,
                    r.person_name,
                    asked_json(r.asked),
                    r.owner,
                    r.status.value,
                    r.card_id,
                    answer_json(r.answer),
                    r.created_at,
                    r.expires_at,
                ),
            )

    async def get_form(self: Db, form_id: str) -> FormRow | None:
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM mcp_forms WHERE form_id = ?", (form_id,)
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else _row(tuple(row))

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
                f"SELECT {_COLUMNS} FROM mcp_forms WHERE form_id = ?", (form_id,)
            ) as cur:
                row = await cur.fetchone()
            if row is not None and row[8] is not None:
                await db.execute("UPDATE mcp_forms SET answer = NULL WHERE form_id = ?", (form_id,))
        return None if row is None else _row(tuple(row))

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


def _row(row: tuple[object, ...]) -> FormRow:
    form_id, key, person_id, person_name, asked, owner, status, card, answer, made, expires = row
    return FormRow(
        form_id=str(form_id),
        key=str(key),
        person_id=str(person_id),
        person_name=str(person_name),
        asked=read_asked(str(asked)),
        owner=str(owner),
        status=FormStatus(str(status)),
        created_at=float(made),  # type: ignore[arg-type]
        expires_at=float(expires),  # type: ignore[arg-type]
        card_id=None if card is None else str(card),
        answer=read_answer(None if answer is None else str(answer)),
    )
