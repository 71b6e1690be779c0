"""What a sub-agent's run shows in its thread while it works.

Its progress goes to the parent's reply as the ``delegate_task`` call's activity ("▸
``delegate_task`` · working: step 2, grep"), through the presenter's usual paths (coalesced
edits within the surface's budget). What its calls with side effects did shows as for any call
(on the approval card, or in a line of the reply). Its text is not shown: the parent reads its
final answer as the call's result and tells the people.
"""

from __future__ import annotations

from bot.engine.events import (
    ApprovalNeeded,
    CallAllowed,
    EngineEvent,
    EventSink,
    Failed,
    FormNeeded,
    ModelCallStarted,
    SignInEnded,
    SignInNeeded,
    ToolFinished,
    ToolProgress,
    ToolStarted,
)

WAITING = "waiting for a free place"


class SubAgentEvents:
    def __init__(self, parent: EventSink | None, call_id: str, name: str) -> None:
        self._parent = parent
        self._call_id = call_id
        self._name = name
        self.step = 0
        self.failed: str | None = None
        """Why the sub-agent's run failed (a limit reached, the model failing), in words."""
        self._said = ""

    async def __call__(self, event: EngineEvent) -> None:
        match event:
            case ModelCallStarted(round):
                self.step = round
                await self.say(f"working: step {round}")
            case ToolStarted(name=name):
                await self.say(f"working: step {self.step}, {name}")
            case CallAllowed() if self._parent is not None:
                await self._parent(event)  # shown in full in the thread before it runs
                await self.say(self._said)
            case FormNeeded() | SignInNeeded() | SignInEnded() | ApprovalNeeded(inline=True) if (
                self._parent is not None
            ):
                await self._parent(event)  # what an MCP server of its call asks: in the thread
                await self.say(self._said)
            case ToolFinished(side_effects=True) if self._parent is not None:
                await self._parent(event)  # its card, or a line of the reply, shows what it did
                await self.say(self._said)  # the line above took the activity away: back again
            case Failed(message):
                self.failed = message
            case _:
                return

    async def say(self, text: str) -> None:
        self._said = text
        if self._parent is not None and text:
            await self._parent(ToolProgress(self._call_id, self._name, text))
