"""Text that is not valid Unicode (a lone surrogate, which JSON may carry as ``\\ud800``) posted
in the playground is kept and answered, the bad code point replaced by U+FFFD."""

from __future__ import annotations

from tests.adapters.playground.conftest import Playground, next_event
from tests.adapters.playground.test_server import is_bot_message


async def test_a_message_with_a_lone_surrogate_is_kept_and_answered(
    playground: Playground,
) -> None:
    ws = await playground.socket()
    posted = await playground.say("bad \ud800 end", event_id="evt-00000001", user_name="Ada\udc00")
    await playground.idle()
    await next_event(ws, is_bot_message)
    first, _reply = (await playground.thread(posted["thread_id"]))["messages"]
    assert (first["text"], first["author_name"]) == ("bad \ufffd end", "Ada\ufffd")
