"""Which call a server's request belongs to: the newest call of the one thread whose calls run;
refused while calls of several threads run (the protocol does not say which one asks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp_types as types

from bot.mcp.asking import Answer, FormAsked, NobodyAsks, Refused, SampleAsked, Sampled
from bot.mcp.sdk.asks import Calls

FORM = types.ElicitRequestFormParams(
    message="Name?",
    requested_schema={"type": "object", "properties": {"n": {"type": "string"}}},
)


class Asker:
    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[FormAsked] = []

    async def elicit(self, asked: FormAsked) -> Answer:
        self.asked.append(asked)
        return Answer("accept", {"n": self.name})

    async def sample(self, asked: SampleAsked) -> Sampled:
        raise Refused("no")

    def roots(self) -> Sequence[Path]:
        return (Path("/tmp") / self.name,)

    async def note(self, text: str) -> None:
        return None


async def test_a_request_goes_to_the_call_of_the_one_thread_running() -> None:
    calls = Calls("s", NobodyAsks(), 10.0, local=True)
    ann, bea = Asker("ann"), Asker("bea")
    context: Any = None
    with calls.running("book", ann, "t1"), calls.running("book", bea, "t1"):
        answer = await calls.elicit(context, FORM)
        roots = await calls.roots(context)
    assert isinstance(answer, types.ElicitResult) and answer.content == {"n": "bea"}
    assert isinstance(roots, types.ListRootsResult)
    assert [str(r.uri) for r in roots.roots] == ["file:///tmp/bea"]
    assert await calls.elicit(context, FORM) == types.ElicitResult(action="decline")


async def test_a_request_while_calls_of_two_threads_run_is_refused() -> None:
    calls = Calls("s", NobodyAsks(), 10.0, local=True)
    ann, bea = Asker("ann"), Asker("bea")
    context: Any = None
    with calls.running("book", ann, "t1"), calls.running("book", bea, "t2"):
        answer = await calls.elicit(context, FORM)
    assert isinstance(answer, types.ErrorData)
    assert "calls of several threads are running" in answer.message
    assert ann.asked == [] and bea.asked == []


async def test_a_remote_server_is_given_no_roots() -> None:
    calls = Calls("s", NobodyAsks(), 10.0, local=False)
    context: Any = None
    with calls.running("where", Asker("ann"), "t1"):
        roots = await calls.roots(context)
    assert roots == types.ListRootsResult(roots=[])
