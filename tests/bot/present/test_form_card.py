"""The card of a form an MCP server asks for: fields in words, a link with its host, and a
form too long for one message cut to fit (the form itself shows every field)."""

from __future__ import annotations

from bot.mcp.asking import FormAsked
from bot.mcp.form_schema import Form
from bot.mcp.pending import FormStatus, PendingForm
from bot.present.form_card import buttons, card_text


def pending(asked: FormAsked) -> PendingForm:
    return PendingForm("f1", "slack:T1:C1:1.1", "slack:U1", "Ada", asked, 1_800_000_000.0)


def test_a_long_form_is_cut_to_fit_one_message() -> None:
    schema = {
        "type": "object",
        "properties": {
            f"field_{n}": {"type": "string", "description": "x" * 80} for n in range(40)
        },
    }
    form = pending(FormAsked("tickets", "book", "Details?", Form.read("Details?", schema)))
    text = card_text(form, 2_000)
    assert len(text) <= 2_000 and "more: Fill in… shows them" in text
    assert [b.label for b in buttons(form)] == ["Fill in…", "Decline", "Cancel"]


def test_a_link_names_its_host_and_an_answered_card_loses_its_buttons() -> None:
    form = pending(FormAsked("tickets", "sign_in", "Sign in", url="https://sso.example.org/x?y=1"))
    text = card_text(form)
    assert "Link (to **sso.example.org**): https://sso.example.org/x?y=1" in text
    assert [b.label for b in buttons(form)] == ["I opened it: done", "Decline", "Cancel"]
    form.status = FormStatus.DECLINED
    assert buttons(form) == () and card_text(form).startswith("❌ **Declined** by Ada")
