"""Cost of the compaction check with one new message on top of 10k, 100k and 1M tokens of history.

    .venv/bin/python benchmarks/compact_check.py [--checks 200] [--sizes 10000 100000 1000000]

Each size gets a real session (SQLite store, the default_compact callback). The first check
counts the whole history once; every later check sees one new message and must cost the same at
every size. For contrast, "recount" is what a check costs when it re-tokenizes the history
(seed 001's `estimate_tokens(session.get_messages())`).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crow_acp.acp.agent import AcpAgent
from crow_acp.config import Config, ModelProfile
from crow_acp.core.session import Session
from crow_acp.core.session_view import SessionView
from crow_acp.events import Usage
from crow_acp.history import EntryMeta
from crow_compact import default_compact
from crow_compact.tokens import count_message, encoder_for

WORDS = "the of session tool call result file path def return async await import class token model user".split()


def message(rng: random.Random, index: int) -> tuple[dict, dict]:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 240)))
    match index % 4:
        case 0:
            return {"role": "user", "content": text}, {"blocks": [{"type": "text", "text": text}]}
        case 1:
            call = {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "a.py"}'},
            }
            return {"role": "assistant", "content": text[:200], "tool_calls": [call]}, {}
        case 2:
            return {"role": "tool", "tool_call_id": f"call_{index - 1}", "content": text}, {}
        case _:
            return {"role": "assistant", "content": text}, {}


async def fill(session: Session, tokens: int, rng: random.Random) -> int:
    encoder, total, index = encoder_for("bench"), 0, 0
    while total < tokens or index % 4:
        body, extra = message(rng, index)
        session.record(body, EntryMeta.from_json(extra))
        total += count_message(encoder, body)
        index += 1
    return total


async def measure(agent: AcpAgent, tokens: int, checks: int) -> dict:
    sid = (await agent.new_session(cwd=str(agent.config.home), mcp_servers=[])).session_id
    session, rng = agent.sessions[sid], random.Random(tokens)
    access = SessionView(session)
    await fill(session, tokens, rng)
    compact = default_compact(threshold=10**12)  # never compacts: this measures the check itself
    started = time.perf_counter()
    await compact(access, step=0)
    first = time.perf_counter() - started
    ledger = compact._states[sid].ledger
    history_tokens, history_messages = ledger.total, len(session.history)
    times, tokenized = [], ledger.tokenized
    for i in range(checks):
        body, extra = message(rng, 3)  # an assistant reply, as post_response sees it
        entry = session.record(body, EntryMeta.from_json(extra))
        started = time.perf_counter()
        await compact(access, response=entry.message, usage=Usage(ledger.size, 50), finish_reason="stop", step=i)
        times.append(time.perf_counter() - started)
    per_check = (ledger.tokenized - tokenized) / checks
    encoder = encoder_for("bench")
    started = time.perf_counter()
    sum(count_message(encoder, m) for m in access.get_messages())
    recount = time.perf_counter() - started
    times.sort()
    return {
        "tokens": history_tokens,
        "messages": history_messages,
        "first": first,
        "median": statistics.median(times),
        "p95": times[int(len(times) * 0.95) - 1],
        "tokenized": per_check,
        "recount": recount,
    }


async def main(sizes: list[int], checks: int) -> None:
    with tempfile.TemporaryDirectory() as home:
        profile = ModelProfile(model="bench", base_url="http://127.0.0.1:9/v1", api_key="unused")
        agent = AcpAgent(Config(home=Path(home), models={"bench": profile}, model="bench"))
        print(f"encoder: {encoder_for('bench').name}; {checks} checks per size; python {sys.version.split()[0]}")
        header = (
            "history tokens",
            "messages",
            "first check",
            "check median",
            "check p95",
            "tokenized/check",
            "recount",
        )
        print(" | ".join(f"{h:>15}" for h in header))
        for tokens in sizes:
            row = await measure(agent, tokens, checks)
            cells = (
                f"{row['tokens']:,}",
                f"{row['messages']:,}",
                _ms(row["first"]),
                _us(row["median"]),
                _us(row["p95"]),
                f"{row['tokenized']:.0f}",
                _ms(row["recount"]),
            )
            print(" | ".join(f"{c:>15}" for c in cells))
        await agent.shutdown()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    asyncio.run(main(args.sizes, args.checks))
