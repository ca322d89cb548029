"""The fault matrix's harness (tests/server/test_fault_matrix.py): one class of faults run variant by
variant against a real `crow acp`, with the checks after each (survived, history valid, nothing
lost), and the report line for the issue's table."""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from crow_acp.testing import Entry, Fault, Reply, ScriptedModel
from support.helpers import TESTS, echo_entry, write_config
from support.history_checks import assert_history_valid, assert_requests_valid, stored_rows
from support.raw_wire import RawCrow

FAULTY = TESTS / "mcp_servers" / "faulty_server.py"
SERVERS = [
    echo_entry(),
    {"name": "faulty", "command": sys.executable, "args": [str(FAULTY)], "env": []},
]
FOLLOW_UP = "still there?"


@dataclass
class Matrix:
    """One class of faults: runs each variant, then checks survival, history and loss."""

    name: str
    crow: RawCrow
    model: ScriptedModel
    home: Path
    session_id: str
    variants: list[str] = field(default_factory=list)
    router: Router | None = None
    """Set when several sessions prompt at once: the model's answers go by prompt, not by arrival."""

    def rows(self) -> list[tuple[dict, dict, bool]]:
        return said(self.home, self.session_id)

    def shown(self, start: int) -> str:
        """The reply text this session's editor was shown since crow.received[start]."""
        updates = [m["params"] for m in self.crow.received[start:] if m.get("method") == "session/update"]
        return "".join(
            p["update"]["content"]["text"] for p in updates
            if p["sessionId"] == self.session_id and p["update"]["sessionUpdate"] == "agent_message_chunk"
        )  # fmt: skip

    async def prompt_variant(self, variant: str, entries: list[Entry], *, text: str | None = None) -> dict[str, Any]:
        """The model answers the variant's prompt with `entries`; whatever crow replies is returned."""
        if self.router is None:
            self.model.add(*entries)
        else:
            self.router.add(text or variant, entries)
        before, shown_from = self.rows(), len(self.crow.received)
        reply = await self.crow.prompt(self.session_id, text or variant, timeout=100)
        shown = self.shown(shown_from)
        after = self.rows()
        assert after[: len(before)] == before, f"{variant}: earlier rows changed"
        added = [message for message, _, _ in after[len(before) :]]
        assert any(m["role"] == "user" and m["content"] == (text or variant) for m in added), f"{variant}: prompt lost"
        recorded = "".join(m.get("content") or "" for m in added if m["role"] == "assistant")
        assert recorded == shown, f"{variant}: shown {shown!r:.80} but recorded {recorded!r:.80}"
        await self.survived(variant)
        return reply

    async def survived(self, variant: str) -> None:
        self.variants.append(variant)
        assert self.crow.proc.returncode is None, f"{variant}: crow exited"
        requests = len(self.model.requests)
        reply = await self.crow.prompt(self.session_id, FOLLOW_UP, timeout=100)
        assert reply.get("result", {}).get("stopReason") == "end_turn", f"{variant}: {reply}"
        assert_history_valid(self.home, self.session_id)
        assert_requests_valid(self.model.requests[requests:])

    def report(self, lost: str = "nothing") -> None:
        report(self.name, len(self.variants), lost)


class Router:
    """The scripted model's answers by the prompt of the turn asking, for variants run at once in
    several sessions (the order their requests arrive in is not known): each request gets the next
    entry scripted for its prompt, and a prompt with nothing scripted (the follow-up) gets `fallback`."""

    def __init__(self, model: ScriptedModel, fallback: Reply) -> None:
        self.turns: dict[str, deque[Entry]] = {}
        self.fallback = fallback
        model.default = self

    def add(self, prompt: str, entries: list[Entry]) -> None:
        self.turns.setdefault(prompt, deque()).extend(entries)

    def __call__(self, request: dict) -> Reply | Fault:
        queue = self.turns.get(last_prompt(request))
        entry = queue.popleft() if queue else self.fallback
        assert isinstance(entry, (Reply, Fault)), "a routed entry is a Reply or a Fault"
        return entry


def last_prompt(request: dict) -> str:
    """The text of the last user message the model was sent (the prompt of the turn asking)."""
    content = next((m["content"] for m in reversed(request["messages"]) if m["role"] == "user"), "")
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


async def run_lanes(lanes: list[tuple[Matrix, list[tuple[str, list[Entry]]]]]) -> dict[str, dict[str, Any]]:
    """Each lane's variants one after another in its session, the lanes at once (their waits overlap);
    returns crow's reply to each variant's prompt."""
    replies: dict[str, dict[str, Any]] = {}

    async def lane(matrix: Matrix, variants: list[tuple[str, list[Entry]]]) -> None:
        for name, entries in variants:
            replies[name] = await matrix.prompt_variant(name, entries)

    async with anyio.create_task_group() as group:
        for matrix, variants in lanes:
            group.start_soon(lane, matrix, variants)
    return replies


def report(name: str, variants: int, lost: str) -> None:
    """One line of the issue's table, when FAULT_MATRIX_REPORT names a file (every assertion above held)."""
    if path := os.environ.get("FAULT_MATRIX_REPORT"):
        line = {"class": name, "variants": variants, "survived": True, "history_valid": True, "lost": lost}
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")


async def open_matrix(
    name: str,
    crow: RawCrow,
    model: ScriptedModel,
    home: Path,
    cwd: Path,
    *,
    servers: list | None = None,
    router: Router | None = None,
) -> Matrix:
    reply = await crow.call("session/new", {"cwd": str(cwd), "mcpServers": SERVERS if servers is None else servers})
    return Matrix(name, crow, model, home, reply["result"]["sessionId"], router=router)


def said(home: Path, session_id: str) -> list[tuple[dict, dict, bool]]:
    """The stored rows of the conversation; the system prompt is left out (the prompt callback refreshes it)."""
    return [row for row in stored_rows(home, session_id) if row[0]["role"] != "system"]


def quick_config(home: Path, extra: str = "") -> None:
    write_config(home, "max_retries = 0\n[timeouts]\nmcp_call = 3\n" + extra)
