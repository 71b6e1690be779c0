"""Two real ``threadline run`` workers on one PostgreSQL database and one fake Slack (Socket
Mode), with an MCP server that asks for a form while its tool runs: the run, and the call
that waits, are on worker a; worker b opens its link after the card shows, so Slack hands the
card's "Fill in…" and the modal sent to b (the newest connection). b opens the modal, records
the answer and updates the card; a hears the nudge, and the tool's result is the answer."""

from __future__ import annotations

import json
from pathlib import Path

from tests.adapters.slack.test_mcp_forms import values
from tests.e2e.workers import WAIT, sql, until_rows, worker
from tests.fakes.mcp_asking_server import stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.slack import MENTION, FakeSlack, Message, payloads
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

CHANNEL = "CGENERAL"


def card_of(slack: FakeSlack, root: Message) -> Message | None:
    found = [
        m
        for m in slack.replies(CHANNEL, root.ts)
        if any(b["text"]["text"] == "Fill in…" for b in m.buttons)
    ]
    return found[0] if found else None


async def test_a_form_shown_by_one_worker_is_answered_through_the_other(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    command = stdio_command()
    (tmp_path / "threadline.toml").write_text(
        "[mcp_servers.asking]\n"
        f"command = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\n"
        "timeout_s = 60\n"
        '[tools."asking__book"]\n'
        'approval = "never"\n'
    )
    slack = FakeSlack()
    await slack.start()
    slow = {"THREADLINE_WORKER_POLL_S": "30"}  # the nudge wakes the call, not a poll
    try:
        async with FakeOpenAI() as model:
            model.push(Reply(calls=[FakeCall("asking__book", {})]), Reply("Booked for Ann."))
            async with worker(tmp_path, "a", url, slack, model.base_url, **slow) as a:
                root = await slack.say("UADA", CHANNEL, f"{MENTION} book me a seat")
                await slack.wait_for(lambda: card_of(slack, root) is not None, WAIT)
                card = card_of(slack, root)
                assert card is not None and "asks Ada to fill in a form" in card.shown
                [form] = await until_rows(
                    url, "SELECT form_id, owner FROM mcp_forms WHERE card_id = $1", card.ts
                )
                assert form["owner"] == "a"

                async with worker(tmp_path, "b", url, slack, model.base_url, **slow) as b:
                    click = await slack.click("UADA", card, "Fill in…")  # b's link: the newest
                    assert click.acked_in_time
                    await slack.wait_for(lambda: len(slack.api.views) == 1, WAIT)
                    view = slack.api.views[0]
                    assert json.loads(view["private_metadata"])["form"] == form["form_id"]

                    typed = values(view, {"name": "Ann", "seats": "2", "newsletter": True})
                    user = slack.workspace.users["UADA"]
                    sent = await slack.deliver(
                        "interactive", payloads.view_submission(user, view, typed)
                    )
                    assert sent.acked_in_time
                    await slack.wait_for(lambda: "Sent." in slack.ephemerals("UADA"), WAIT)
                    await slack.wait_for(
                        lambda: any(
                            "Booked for Ann." in m.shown for m in slack.replies(CHANNEL, root.ts)
                        ),
                        WAIT,
                    )
                    [row] = await sql(url, "SELECT status, answer FROM mcp_forms")
        answered = model.requests[1].messages[-1]
    finally:
        await slack.stop()
    recorded = (
        f"form {form['form_id']} in slack:T0FAKE:{CHANNEL}:{root.ts}: sent here, for worker a"
    )
    assert recorded in b.output and recorded not in a.output  # b recorded it, for a's call
    assert answered["role"] == "tool"
    content = str(answered["content"])  # booking: {...}, inside the tool's output tags
    said = json.loads(content[content.index("booking: ") + 9 : content.rindex("}") + 1])
    assert said == {
        "action": "accept",
        "content": {"name": "Ann", "seats": 2, "cabin": "economy", "newsletter": True},
    }
    assert (row["status"], row["answer"]) == ("sent", None)  # read by a, then forgotten
    assert "Answered" in card.shown and not card.buttons  # updated once, by b
