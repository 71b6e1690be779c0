"""A small MCP server built with the ``mcp`` SDK's own server side, whose tools ask the client
for things while they run: a form (``book``), a link (``sign_in``), a form described badly
(``bad_form``), many forms at once (``flood``), its roots (``where``), a model's answer
(``summarise``), content with audiences and an image (``picture``), and files
(``report``).

Run ``python tests/fakes/mcp_asking_server.py`` (stdio; :func:`stdio_command`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import warnings
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
BOOKING = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 40},
        "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 4},
        "cabin": {
            "type": "string",
            "title": "Cabin",
            "enum": ["economy", "business"],
            "default": "economy",
        },
        "newsletter": {"type": "boolean", "title": "Newsletter"},
    },
    "required": ["name", "seats"],
}
BAD = {
    "type": "object",
    "properties": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}},
}

warnings.simplefilter("ignore")  # roots and sampling are deprecated in a later protocol
server = MCPServer("asking", version="1.0")


def _said(result: types.ElicitResult) -> str:
    return json.dumps({"action": result.action, "content": result.content}, sort_keys=True)


@server.tool(description="Book seats: asks the person for the booking's details.")
async def book(ctx: Context) -> str:
    result = await ctx.session.elicit_form(
        "Who is travelling?", BOOKING, related_request_id=ctx.request_id
    )
    return f"booking: {_said(result)}"


@server.tool(description="Asks the person to open a sign-in link.")
async def sign_in(ctx: Context) -> str:
    result = await ctx.session.elicit_url(
        "Sign in to Tickets",
        "https://tickets.example.com/sign-in?s=1",
        "e-1",
        related_request_id=ctx.request_id,
    )
    return f"sign-in: {result.action}"


@server.tool(description="Asks for a form whose schema is nested (not allowed).")
async def bad_form(ctx: Context) -> str:
    try:
        result = await ctx.session.elicit_form(
            "Where do you live?", BAD, related_request_id=ctx.request_id
        )
    except Exception as exc:  # the client's refusal
        return f"refused: {exc}"
    return f"bad form: {_said(result)}"


@server.tool(description="Asks for five forms at once.")
async def flood(ctx: Context) -> str:
    async def one(n: int) -> str:
        result = await ctx.session.elicit_form(
            f"Form {n}",
            {"type": "object", "properties": {"x": {"type": "string"}}},
            related_request_id=ctx.request_id,
        )
        return str(result.action)

    return "flood: " + ",".join(await asyncio.gather(*(one(n) for n in range(5))))


@server.tool(description="Says the roots the client gave.")
async def where(ctx: Context) -> str:
    roots = await ctx.session.list_roots()
    return "roots: " + json.dumps([str(r.uri) for r in roots.roots])


@server.tool(description="Asks the client's model to summarise a text.")
async def summarise(ctx: Context, text: str) -> str:
    try:
        result = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
            max_tokens=5000,
            system_prompt="Summarise in one line.",
            related_request_id=ctx.request_id,
        )
    except Exception as exc:
        return f"sampling refused: {exc}"
    content = result.content
    said = content.text if isinstance(content, types.TextContent) else "?"
    return f"summary ({result.model}): {said}"


@server.tool(description="Returns a picture, a note for the user and one for the assistant.")
async def picture() -> list[Any]:
    return [
        types.TextContent(type="text", text="A red dot."),
        types.TextContent(
            type="text",
            text="USER ONLY: the picture was made at 09:00.",
            annotations=types.Annotations(audience=["user"]),
        ),
        types.TextContent(
            type="text",
            text="ASSISTANT ONLY: describe it briefly.",
            annotations=types.Annotations(audience=["assistant"]),
        ),
        types.ImageContent(
            type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"
        ),
    ]


REPORT_CSV = b"region,total\nnorth,12\nsouth,30\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28)


@server.tool(description="Returns files: a CSV report, a recording for the user, a broken one.")
async def report() -> list[Any]:
    return [
        types.TextContent(type="text", text="The quarter's report."),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="file:///reports/q3%20totals.csv",
                mime_type="text/csv",
                blob=base64.b64encode(REPORT_CSV).decode(),
            ),
        ),
        types.AudioContent(
            type="audio",
            data=base64.b64encode(WAV).decode(),
            mime_type="audio/wav",
            annotations=types.Annotations(audience=["user"]),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="file:///reports/broken.bin", mime_type="application/pdf", blob="%%%"
            ),
        ),
    ]


def stdio_command() -> list[str]:
    return [sys.executable, __file__]


if __name__ == "__main__":
    server.run("stdio")
