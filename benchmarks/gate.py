"""What the tool gate and the strict-history pass cost per model call and per tool call.

    .venv/bin/python benchmarks/gate.py [--runs 7]

- strict_messages: one pass over a well-formed history of N messages (runs before every model call),
  against copying the list, which any request already costs; and over a damaged history.
- the before_tool chain: a plugin tool called through the whole gate (five guards that allow, the
  permission policy, five after_tool callbacks) against the same tool with no hooks, in process.
Each figure is the median of --runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def history(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    for n in range(turns):
        calls = [
            {"id": f"c{n}_{k}", "type": "function", "function": {"name": "t", "arguments": '{"a": 1}'}}
            for k in range(2)
        ]
        messages += [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": calls}]
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "r"} for c in calls]
        messages += [{"role": "assistant", "content": "a"}]
    return messages


def median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def strict_figures(runs: int) -> None:
    from crow_acp.core.history_rules import strict_messages

    for turns in (100, 2000):
        messages = history(turns)
        damaged = [dict(m) for m in messages]
        damaged.pop(3)  # a lost result
        damaged.append({"role": "tool", "tool_call_id": "ghost", "content": "?"})
        copy = median_ms(lambda m=messages: list(m), runs)
        clean = median_ms(lambda m=messages: strict_messages(m), runs)
        broken = median_ms(lambda m=damaged: strict_messages(m), runs)
        print(
            f"strict_messages, {len(messages)} messages: {clean:.2f} ms (list copy {copy:.3f} ms), "
            f"damaged {broken:.2f} ms"
        )


async def gate_figures(runs: int, calls: int = 200) -> None:
    import os

    from crow_acp import AcpAgent, CrowCallbacks, FunctionTool, load_config
    from crow_acp.testing import Reply, ScriptedModel, ToolCall

    async def touch(arguments: dict[str, Any], context: Any) -> str:
        return "ok"

    tool = FunctionTool("touch", "Touch.", {"type": "object", "properties": {}}, touch, read_only=True)

    async def allow(session: Any, **_: Any) -> None:
        return None

    hooked = CrowCallbacks(before_tool=[allow] * 5, after_tool=[allow] * 5)
    for label, extra in (("no hooks", CrowCallbacks()), ("5 before_tool + 5 after_tool", hooked)):
        medians = []
        for _ in range(runs):
            script = [Reply(tool_calls=[ToolCall("touch", {}, id=f"c{n}") for n in range(calls)]), Reply(text="ok")]
            async with ScriptedModel(script) as model:
                os.environ.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="k")
                with tempfile.TemporaryDirectory() as home:
                    (Path(home) / "config.toml").write_text("[titles]\nenabled = false\n")  # no side calls
                    agent = AcpAgent(load_config(home=Path(home)))
                    callbacks = CrowCallbacks(begin_session=[lambda session, **_: session.add_tool(tool)]) + extra
                    agent.set_callbacks(callbacks)
                    sid = (await agent.new_session(cwd=home, mcp_servers=[])).session_id
                    start = time.perf_counter()
                    await agent.prompt(prompt=[{"type": "text", "text": "go"}], session_id=sid)
                    medians.append((time.perf_counter() - start) * 1000)
                    await agent.shutdown()
        print(f"one reply with {calls} tool calls, {label}: {statistics.median(medians):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    strict_figures(runs)
    asyncio.run(gate_figures(runs))


if __name__ == "__main__":
    main()
