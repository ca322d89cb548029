"""Agents for the hook tests, served with `crow acp --agent tests/agents/hook_agent.py:<factory>`.

Every callback appends one JSON line to the file named by $HOOK_LOG, so a test can assert the
exact firing order across processes (the log survives a restart).
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio

from crow_acp import AcpAgent, CrowCallbacks, SessionAccess


def log(hook: str, session: SessionAccess, **fields: Any) -> None:
    with open(os.environ["HOOK_LOG"], "a") as out:
        out.write(json.dumps({"hook": hook, "session": session.session_id, **fields}) + "\n")


async def begin_session(session: SessionAccess, *, loaded: bool, **_: Any) -> None:
    log("begin_session", session, loaded=loaded)


async def pre_request(session: SessionAccess, *, step: int, **_: Any) -> None:
    log("pre_request", session, step=step, messages=len(session.get_messages()))


async def post_response(
    session: SessionAccess, *, response: dict, usage: Any, finish_reason: Any, step: int, **_: Any
) -> None:
    usage_fields = {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens} if usage else None
    log("post_response", session, step=step, content=response.get("content"), usage=usage_fields, finish=finish_reason)


async def end_turn(session: SessionAccess, *, stop_reason: str, error: str | None, **_: Any) -> None:
    log("end_turn", session, stop_reason=stop_reason, error=error)


def logging_callbacks() -> CrowCallbacks:
    return CrowCallbacks(
        begin_session=[begin_session], pre_request=[pre_request], post_response=[post_response], end_turn=[end_turn]
    )


def agent_with(callbacks: CrowCallbacks) -> AcpAgent:
    agent = AcpAgent()
    agent.set_callbacks(callbacks)
    return agent


def build() -> AcpAgent:
    """Only the logging callbacks."""
    return agent_with(logging_callbacks())


def build_raising() -> AcpAgent:
    """A pre_request callback that raises before the logging one runs."""

    def broken(session: SessionAccess, **_: Any) -> None:
        raise RuntimeError("broken hook")

    callbacks = logging_callbacks()
    callbacks.pre_request.insert(0, broken)
    return agent_with(callbacks)


def build_printing() -> AcpAgent:
    """Callbacks that print to stdout, which must not reach the protocol stream."""

    def chatty(session: SessionAccess, **kwargs: Any) -> None:
        # No newline: on the protocol stream this would glue itself to the next message and break it.
        print("stray text", end="", flush=True)
        os.write(1, b"raw bytes on fd 1")

    callbacks = logging_callbacks()
    for name in ("begin_session", "pre_request", "post_response", "end_turn"):
        getattr(callbacks, name).insert(0, chatty)
    return agent_with(callbacks)


def build_mutating() -> AcpAgent:
    """Writes through SessionAccess: context at begin, a note before each model call, a side prompt at the end."""

    async def remember(session: SessionAccess, *, loaded: bool, **_: Any) -> None:
        session.set_context("begins", session.get_context("begins", 0) + 1)

    async def note(session: SessionAccess, *, step: int, **_: Any) -> None:
        if step == 0:
            session.add_message("user", f"NOTE begins={session.get_context('begins')}")

    async def side(session: SessionAccess, *, stop_reason: str, **_: Any) -> None:
        before = session.get_messages()
        answer = await session.prompt("SIDE: summarize")
        log("side_prompt", session, answer=answer, unchanged=before == session.get_messages())

    callbacks = logging_callbacks()
    callbacks.begin_session.append(remember)
    callbacks.pre_request.append(note)
    callbacks.end_turn.append(side)
    return agent_with(callbacks)


def build_compacting() -> AcpAgent:
    """Compacts once, to the last user message, before the third model call of the session."""

    async def compact(session: SessionAccess, **_: Any) -> None:
        answers = sum(m["role"] == "assistant" for m in session.get_messages())
        if answers >= 2 and not session.get_context("compactions"):
            replaced = session.compact_messages(keep_last=1, summary="SUMMARY-OF-EARLIER")
            log("compacted", session, replaced=replaced)

    callbacks = logging_callbacks()
    callbacks.pre_request.append(compact)
    return agent_with(callbacks)


def build_slow_post_response() -> AcpAgent:
    """A post_response callback that takes a while: a cancel can land after the reply is recorded."""

    async def slow(session: SessionAccess, *, response: dict, **_: Any) -> None:
        if response.get("tool_calls"):
            log("slow_post_response", session)
            await anyio.sleep(30)

    callbacks = logging_callbacks()
    callbacks.post_response.append(slow)
    return agent_with(callbacks)


def build_tool_hooks() -> AcpAgent:
    """before_tool / after_tool over stdio, on the echo MCP server: a veto, a rewrite, a cache, a result rewrite.
    Every step logs the call it saw, so the test can check the order against the permission request."""
    from crow_acp import Answer, Refuse, Rewrite

    async def guard(session: SessionAccess, *, hook: str, call: Any, **_: Any) -> Any:
        log(hook, session, call=call.id, name=call.name, arguments=call.arguments, read_only=call.read_only)
        if call.name == "echo__add" and call.arguments.get("a") == 666:
            return Refuse("666 is not a number I add")
        if call.name == "echo__echo" and call.arguments.get("text") == "x":
            return Rewrite({"text": "rewritten"})
        if call.name == "echo__add" and call.arguments == {"a": 1, "b": 2}:
            return Answer("3 (cached)")
        return None

    async def shout(session: SessionAccess, *, hook: str, call: Any, result: Any, ran: bool, **_: Any) -> Any:
        log(hook, session, call=call.id, ran=ran, text=result.text)
        return result.text.upper() if call.name == "echo__echo" else None

    return agent_with(CrowCallbacks(before_tool=[guard], after_tool=[shout], end_session=[end_session]))


async def end_session(session: SessionAccess, *, hook: str, reason: str, **_: Any) -> None:
    log(hook, session, reason=reason)


def build_ending() -> AcpAgent:
    """end_session logging, at most two sessions in memory (config: [sessions] max_open = 2)."""
    return agent_with(CrowCallbacks(begin_session=[begin_session], end_session=[end_session]))


def build_broken_command() -> AcpAgent:
    """A slash command that raises, with end_turn logging."""
    from crow_acp import SlashCommand

    async def broken(session: SessionAccess, argument: str) -> str:
        raise ValueError(f"cannot {argument}")

    class Broken:
        commands = (SlashCommand("broken", "Raises", broken),)

        async def __call__(self, session: SessionAccess, **_: Any) -> None:
            pass

    return agent_with(CrowCallbacks(begin_session=[Broken()], end_turn=[end_turn]))
