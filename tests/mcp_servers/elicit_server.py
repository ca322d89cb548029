"""An MCP server (stdio) whose tools need the user's answer in the middle of the call (elicitation).

At MCP 2026-07-28, which crow's client and this server speak, a tool that needs input answers its
call with an `InputRequiredResult` carrying the questions, and the client calls again with the
answers (`input_responses`): the call waits on the user in between. `book` asks a form (an enum, a
bounded integer, a required text, a boolean) and reports exactly what came back; `login` asks in URL
mode; `nested` asks with a form crow cannot show (a nested object). Each result is the answer as the
server saw it: the tests read it to prove what reached the server.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitRequestURLParams, InputRequiredResult

server = MCPServer("elicit")

FORM = {
    "type": "object",
    "properties": {
        "seat": {"type": "string", "title": "Seat", "enum": ["aisle", "window"]},
        "bags": {"type": "integer", "title": "Bags", "minimum": 0, "maximum": 3},
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "meal": {"type": "boolean", "title": "Meal"},
        # Python's re takes exponential time on it ("aaa…ab"): checked in linear time, crow does not hang.
        "code": {"type": "string", "title": "Code", "pattern": "^(a+)+$"},
    },
    "required": ["seat", "name"],
}


def _ask(ctx: Context, params: Any) -> InputRequiredResult | str:
    """The question on the first round; what came back on the second."""
    answers = ctx.input_responses
    if not answers:
        return InputRequiredResult(input_requests={"q": ElicitRequest(params=params)})
    result = answers["q"]
    return "server saw " + json.dumps({"action": result.action, "content": result.content}, sort_keys=True)


@server.tool()
async def book(flight: str, ctx: Context) -> InputRequiredResult | str:
    """Book a flight, asking the traveller for their seat."""
    return _ask(ctx, ElicitRequestFormParams(message=f"Seat for flight {flight}?", requested_schema=FORM))


@server.tool()
async def login(ctx: Context) -> InputRequiredResult | str:
    """Sign in through a web page."""
    return _ask(ctx, ElicitRequestURLParams(message="Sign in to continue", url="https://example.com/login"))


@server.tool()
async def nested(ctx: Context) -> InputRequiredResult | str:
    """Ask with a form that is not flat."""
    schema = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}
    return _ask(ctx, ElicitRequestFormParams(message="Address?", requested_schema=schema))


@server.tool()
async def flood(ctx: Context) -> InputRequiredResult | str:
    """Ask 300 questions at once (crow puts one before the user)."""
    answers = ctx.input_responses
    if not answers:
        asked = {f"q{n}": ElicitRequest(params=ElicitRequestFormParams(message=f"Question {n}?", requested_schema=FORM))
                 for n in range(300)}  # fmt: skip
        return InputRequiredResult(input_requests=asked)
    return "server saw " + json.dumps(sorted({r.action for r in answers.values()}))


@server.tool()
async def huge(ctx: Context) -> InputRequiredResult | str:
    """Ask with a form of 1.4 MB."""
    fields = {f"f{n}": {"type": "string", "title": "x" * 700} for n in range(2000)}
    return _ask(
        ctx, ElicitRequestFormParams(message="Fill in", requested_schema={"type": "object", "properties": fields})
    )


@server.tool()
async def page(url: str, message: str, ctx: Context) -> InputRequiredResult | str:
    """Ask the user to open `url`, saying `message`."""
    return _ask(ctx, ElicitRequestURLParams(message=message, url=url))


if __name__ == "__main__":
    server.run()
