"""Issue 29's cache figure: how much of each model request repeats the previous request's prefix, per wire.

    .venv/bin/python benchmarks/cache_prefix.py [--turns 30]

A scripted session of the default agent (`crow acp`, its system prompt, skills and compaction) over stdio:
tool turns, a skill triggered, a plan written, an image, a switch to plan mode and back, and one
/compact. For each wire (chat, responses, anthropic), every streamed request after the first is compared
with the one before it: the share of its input (tools, system, messages, as the provider reads them, in
JSON characters) that is the previous request's input, unchanged, from the start. The call right after the
compaction is excepted (it starts from a new summary). It also counts the calls whose request begins with
the whole previous request, byte for byte (what a provider's prefix cache needs); below 100%, the rest of
the share is only what the call adds. The cost is the session's input at Claude Sonnet's list prices ($3
per million input tokens, $3.75 written to the cache, $0.30 read from it): for the anthropic wire from the
scripted API's own cache report, for the others as if the shared prefix were read from a cache at the
same rates; "without" pays every input token at $3.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import tempfile
from pathlib import Path

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, ImageContentBlock, Implementation, McpServerStdio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crow_acp.testing import Reply, ScriptedModel, ToolCall
from crow_acp.testing.anthropic_wire import AnthropicState

ECHO = Path(__file__).resolve().parents[1] / "tests" / "mcp_servers" / "echo_server.py"
PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")).decode()
VERBOSE = "-v" in sys.argv
PRICE, WRITE, READ = 3.0, 3.75, 0.30
SKILL = "---\nname: release-notes\ndescription: How to write release notes.\ntriggers:\n  - release notes\n---\n"
SKILL += "Write release notes as a list of user-visible changes, newest first.\n" * 20


class Client:
    async def session_update(self, session_id, update, **_):
        pass

    async def request_permission(self, session_id, tool_call, options, **_):
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id))


def units(req: dict) -> list[str]:
    """The request's input as the provider reads it, in order, each unit as JSON (cache_control left out)."""
    if "input" in req:
        parts = [*req.get("tools", []), *req["input"]]
    elif "max_tokens" in req and "messages" in req:
        parts = [*req.get("tools", []), *req.get("system", [])]
        for message in req["messages"]:
            parts += [{"role": message["role"]}, *message["content"]]
    else:
        parts = [*req.get("tools", []), *req["messages"]]
    plain = [{k: v for k, v in p.items() if k != "cache_control"} if isinstance(p, dict) else p for p in parts]
    return [json.dumps(p, sort_keys=True) for p in plain]


def shared(previous: list[str], current: list[str]) -> int:
    """Characters of `current` that repeat `previous` from the start."""
    same = 0
    for old, new in zip(previous, current, strict=False):
        if old != new:
            break
        same += len(new)
    return same


def script(turns: int) -> list[Reply]:
    out: list[Reply] = []
    for n in range(turns):
        if n % 3 == 0:
            out.append(Reply(reasoning=f"turn {n}", tool_calls=[ToolCall("echo__echo", {"text": f"t{n}"})]))
        if n == 6:
            steps = [{"content": "read", "status": "completed"}, {"content": "write", "status": "pending"}]
            out.append(Reply(tool_calls=[ToolCall("write_plan", {"entries": steps})]))
        out.append(Reply(reasoning=f"done {n}", text=f"Answer {n}. " * 30))
    return out


def prompt_of(n: int) -> list:
    blocks = [text_block(f"Prompt {n}: " + "tell me more. " * 20)]
    if n == 4:
        blocks = [text_block("Write the release notes for this.")]
    if n == 9:
        blocks.append(ImageContentBlock(type="image", mime_type="image/png", data=PNG))
    return blocks


async def session(wire: str, turns: int) -> list[dict]:
    home = Path(tempfile.mkdtemp(prefix="crow-cache-"))
    (home / "skills" / "release-notes").mkdir(parents=True)
    (home / "skills" / "release-notes" / "SKILL.md").write_text(SKILL)
    model_id = {"anthropic": "claude-sonnet-test", "responses": "gpt-5-test", "chat": "chat-test"}[wire]
    (home / "config.toml").write_text(
        f'model = "m"\n[models.m]\nmodel = "{model_id}"\napi = "{wire}"\nvision = true\nreasoning = true\n'
        "[titles]\nenabled = false\n"
    )
    work = Path(tempfile.mkdtemp(prefix="crow-cache-work-"))
    async with ScriptedModel([*script(turns), Reply(text="Summary of the work so far.")]) as model:
        model.default = Reply(text="ok")
        env = {**os.environ, "CROW_HOME": str(home), "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": model.base_url}
        env.pop("CROW_API", None)
        async with spawn_agent_process(Client(), sys.executable, "-m", "crow", "acp", env=env, cwd=str(work)) as (
            conn,
            _proc,
        ):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="bench", version="0"),
            )
            echo = McpServerStdio(name="echo", command=sys.executable, args=[str(ECHO)], env=[])
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[echo])).session_id
            for n in range(turns):
                if n == 12:
                    await conn.set_session_mode(session_id=sid, mode_id="plan")
                if n == 14:
                    await conn.set_session_mode(session_id=sid, mode_id="auto")
                if n == 20:
                    await conn.prompt(session_id=sid, prompt=[text_block("/compact")])
                await conn.prompt(session_id=sid, prompt=prompt_of(n))
        return [dict(r, _compaction=not r.get("stream")) for r in model.requests]


def figures(wire: str, requests: list[dict]) -> None:
    streamed = [r for r in requests if not r["_compaction"]]
    # The first streamed request after each summary call starts from the new summary.
    after_compaction = {
        sum(1 for r in requests[:i] if not r["_compaction"]) for i, r in enumerate(requests) if r["_compaction"]
    }
    shares, worst, cached_cost, full_cost, whole = [], (1.0, 0), 0.0, 0.0, 0
    state = AnthropicState()
    previous: list[str] | None = None
    for i, req in enumerate(streamed):
        current = units(req)
        total = sum(len(u) for u in current)
        full_cost += total / 4 * PRICE / 1e6
        if wire == "anthropic":
            usage = state.usage({k: v for k, v in req.items() if k != "_compaction"}, 0)
            cached_cost += (usage["input_tokens"] * PRICE + usage["cache_creation_input_tokens"] * WRITE
                            + usage["cache_read_input_tokens"] * READ) / 1e6  # fmt: skip
        else:
            read = shared(previous, current) if previous else 0
            cached_cost += ((total - read) * PRICE + read * READ) / 4 / 1e6
        if previous is not None and i not in after_compaction:
            share = shared(previous, current) / total
            whole += shared(previous, current) == sum(len(u) for u in previous)
            shares.append(share)
            worst = min(worst, (share, i + 1))
            if VERBOSE and share < 0.95:
                at = next((k for k, (a, b) in enumerate(zip(previous, current, strict=False)) if a != b), None)
                print(f"  call {i + 1}: {share:.1%}, unit {at} of {len(current)} changed:", file=sys.stderr)
                if at is not None:
                    print(f"    was {previous[at][:300]}\n    now {current[at][:300]}", file=sys.stderr)
        previous = current
    mean = sum(shares) / len(shares)
    print(
        f"{wire:9} calls {len(streamed):3}  previous request kept whole in {whole} of {len(shares)}"
        f"  prefix repeated: mean {mean:6.1%}, lowest {worst[0]:6.1%} (call {worst[1]})"
        f"  input cost ${cached_cost:.4f} cached vs ${full_cost:.4f} uncached (ratio {cached_cost / full_cost:.2f})"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("-v", action="store_true", help="say where each request below 95% first differs")
    parser.add_argument("--wires", nargs="*", default=["chat", "responses", "anthropic"])
    args = parser.parse_args()
    for wire in args.wires:
        figures(wire, await session(wire, args.turns))


if __name__ == "__main__":
    asyncio.run(main())
