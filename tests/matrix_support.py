"""The fault matrix's harness (tests/test_fault_matrix.py): one class of faults run variant by
variant against a real `crow acp`, with the checks after each (survived, history valid, nothing
lost), and the report line for the issue's table."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import TESTS, echo_entry, write_config
from history_checks import assert_history_valid, assert_requests_valid, stored_rows
from raw_wire import RawCrow

from crow_acp.testing import Entry, ScriptedModel

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

    def rows(self) -> list[tuple[dict, dict, bool]]:
        return said(self.home, self.session_id)

    async def prompt_variant(self, variant: str, entries: list[Entry], *, text: str | None = None) -> dict[str, Any]:
        """The model answers the variant's prompt with `entries`; whatever crow replies is returned."""
        self.model.add(*entries)
        before, shown_from = self.rows(), len(self.crow.updates)
        reply = await self.crow.prompt(self.session_id, text or variant, timeout=100)
        shown = "".join(u["content"]["text"] for u in self.crow.updates[shown_from:] if u["sessionUpdate"] == "agent_message_chunk")
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


def report(name: str, variants: int, lost: str) -> None:
    """One line of the issue's table, when FAULT_MATRIX_REPORT names a file (every assertion above held)."""
    if path := os.environ.get("FAULT_MATRIX_REPORT"):
        line = {"class": name, "variants": variants, "survived": True, "history_valid": True, "lost": lost}
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")


async def open_matrix(name: str, crow: RawCrow, model: ScriptedModel, home: Path, cwd: Path) -> Matrix:
    reply = await crow.call("session/new", {"cwd": str(cwd), "mcpServers": SERVERS})
    return Matrix(name, crow, model, home, reply["result"]["sessionId"])


def said(home: Path, session_id: str) -> list[tuple[dict, dict, bool]]:
    """The stored rows of the conversation; the system prompt is left out (the prompt callback refreshes it)."""
    return [row for row in stored_rows(home, session_id) if row[0]["role"] != "system"]


def quick_config(home: Path, extra: str = "") -> None:
    write_config(home, "max_retries = 0\n[timeouts]\nmcp_call = 3\n" + extra)
