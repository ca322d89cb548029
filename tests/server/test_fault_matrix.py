"""The fault matrix of issue 13: each class of bad input or fault, in several variants, against a
real `crow acp` over stdio. After every variant: crow survived (a normal prompt on the same
connection ends normally, or after a kill a restarted crow loads the session and prompts), the
stored history is valid (every call answered once, unique ids, JSON-object arguments, valid
UTF-8), and nothing already said was lost (earlier rows are unchanged, and what the editor was
shown of a reply is what was recorded).

Set FAULT_MATRIX_REPORT to a file path to get one JSON line per class (for the issue's table).
The harness (one class of faults, its checks, the report) is tests/support/matrix_support.py.
"""

from __future__ import annotations

import json
import signal

import anyio
import pytest
from support.helpers import CORE_AGENT, TESTS, crow_env
from support.history_checks import assert_history_valid, assert_requests_valid
from support.matrix_support import (
    FOLLOW_UP,
    SERVERS,
    Router,
    last_prompt,
    open_matrix,
    quick_config,
    report,
    run_lanes,
    said,
)
from support.raw_wire import RawCrow, alive, descendants, eventually, raw_crow
from test_stdio_hostile import CWDS, HOSTILE

from crow_acp.acp.rpc.wire import MAX_MESSAGE
from crow_acp.testing import Entry, Fault, Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def test_wire_garbage_and_invalid_params(crow_home, tmp_path):
    quick_config(crow_home)
    with ScriptedModel(default=Reply(text="here")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            matrix = await open_matrix("wire garbage and invalid params", crow, model, crow_home, tmp_path)
            for name, data, _ in HOSTILE:
                before = matrix.rows()
                await crow.write(data)
                await matrix.survived(name)
                assert matrix.rows()[: len(before)] == before
            for method in ("session/new", "session/load", "session/resume"):
                for name, cwd in CWDS:
                    reply = await crow.call(method, {"cwd": cwd, "mcpServers": [], "sessionId": matrix.session_id})
                    assert reply["error"]["code"] == -32602
                    await matrix.survived(f"{method} cwd {name}")
    matrix.report()


async def test_oversized_lines(crow_home, tmp_path):
    quick_config(crow_home)
    with ScriptedModel(default=Reply(text="here")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            matrix = await open_matrix("oversized lines", crow, model, crow_home, tmp_path)
            head = (
                b'{"jsonrpc":"2.0","id":91,"method":"session/prompt",'
                b'"params":{"sessionId":"%s","prompt":[{"type":"text","text":"'
            )
            await crow.write(head % matrix.session_id.encode() + b"x" * (MAX_MESSAGE + 1) + b'"}]}}\n')
            assert (await crow.answer(91))["error"]["code"] == -32600
            await matrix.survived("a prompt one byte over the limit")
            await crow.write(b"[" + b"0," * (30 * 1024 * 1024) + b"0]\n")
            await matrix.survived("a 60 MiB array")
            for _ in range(3):
                await crow.write(b"{" * MAX_MESSAGE)
            await crow.write(b"\n")
            await matrix.survived("an unterminated 96 MiB line of braces")
            await crow.write(
                b'{"jsonrpc":"2.0","id":92,"method":"session/list","params":{"pad":"'
                + b"p" * (MAX_MESSAGE - 200)
                + b'"}}\n'
            )
            assert "result" in await crow.answer(92)
            await matrix.survived("a request just under the limit")
    matrix.report()


async def test_invalid_unicode_at_every_boundary(crow_home, tmp_path):
    quick_config(crow_home)
    pair = "\ud83d\ude00"
    with ScriptedModel(default=Reply(text="here")) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env, "--agent", str(TESTS / "agents" / "unicode_agent.py") + ":build") as crow:
            matrix = await open_matrix("invalid Unicode at each boundary", crow, model, crow_home, tmp_path)
            for raw in (rb"a \ud800 b \udfff", b"bytes \xff\xc0\x80 end"):
                line = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 93,
                        "method": "session/prompt",
                        "params": {"sessionId": matrix.session_id, "prompt": [{"type": "text", "text": "@@"}]},
                    }
                )
                model.add(Reply(text="ok"))
                await crow.write(line.encode().replace(b"@@", raw) + b"\n")
                assert (await crow.answer(93))["result"]["stopReason"] == "end_turn"
                crow.received = [m for m in crow.received if m.get("id") != 93]
                await matrix.survived(f"user: {raw!r}")
            await matrix.prompt_variant("model: a pair split across chunks", [Reply(text=f"x{pair}y", chunks=4)])
            await matrix.prompt_variant("model: lone halves", [Reply(text="a\udc00b\ud83d", chunks=4)])
            await matrix.prompt_variant("model: reasoning halves", [Reply(text="t", reasoning=f"r{pair}\ud800")])
            await matrix.prompt_variant(
                "model: tool arguments split pair",
                [Reply(tool_calls=[ToolCall("echo__echo", '{"text": "' + pair * 20 + '"}')]), Reply(text="done")],
            )
            await matrix.prompt_variant(
                "model: tool arguments escape a lone half",
                [Reply(tool_calls=[ToolCall("echo__echo", r'{"text": "\ud800"}')]), Reply(text="done")],
            )
            for mode in ("bad_utf8", "surrogate"):
                await matrix.prompt_variant(
                    f"MCP result: {mode}",
                    [Reply(tool_calls=[ToolCall("faulty__fault", {"mode": mode})]), Reply(text="done")],
                )
            await matrix.prompt_variant(
                "callback: add_message, context, system prompt", [Reply(text="ok")], text="POISON"
            )
    matrix.report()


async def test_model_faults(crow_home, tmp_path):
    quick_config(crow_home)
    calls = lambda *names: [ToolCall("echo__echo", {"text": n}, id=n) for n in names]  # noqa: E731
    variants: list[tuple[str, list[Entry]]] = [
        ("HTTP 400", [Fault(400, "bad request")]),
        ("HTTP 401", [Fault(401, "no key")]),
        ("HTTP 404", [Fault(404, "no model")]),
        ("HTTP 429", [Fault(429, "slow down", retry_after=0)]),
        ("HTTP 500", [Fault(500)]),
        ("HTTP 503", [Fault(503, "overloaded")]),
        ("stream cut before any chunk", [Fault(cut_after=0, reply=Reply(text="never"))]),
        ("stream cut mid-text", [Fault(cut_after=6, reply=Reply(text="partial reply that is cut", chunks=12))]),
        ("stream cut mid tool call", [Fault(cut_after=4, reply=Reply(tool_calls=calls("cut")))]),
        (
            "invalid tool arguments: not JSON",
            [Reply(tool_calls=[ToolCall("echo__echo", "{not json", id="nj")]), Reply(text="d")],
        ),
        (
            "invalid tool arguments: an array",
            [Reply(tool_calls=[ToolCall("echo__echo", "[1, 2]", id="arr")]), Reply(text="d")],
        ),
        (
            "invalid tool arguments: empty",
            [Reply(tool_calls=[ToolCall("echo__echo", "", id="empty")]), Reply(text="d")],
        ),
        (
            "invalid tool arguments: nested 100000 deep",
            [
                Reply(
                    tool_calls=[ToolCall("echo__echo", '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}", id="deep")]
                ),
                Reply(text="d"),
            ],
        ),
        ("duplicate ids in one reply", [Reply(tool_calls=calls("dup", "dup")), Reply(text="d")]),
        ("an id reused from an earlier turn", [Reply(tool_calls=calls("dup")), Reply(text="d")]),
        ("an unknown tool", [Reply(tool_calls=[ToolCall("no_such_tool", {}, id="unknown")]), Reply(text="d")]),
        ("an empty reply", [Reply(text="")]),
        ("finish_reason length", [Reply(text="long", finish_reason="length")]),
        ("a 5 MB reply", [Reply(text="z" * 5_000_000, chunks=50)]),
    ]
    with ScriptedModel(default=Reply(text="here")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            matrix = await open_matrix("model faults", crow, model, crow_home, tmp_path)
            for name, entries in variants:
                await matrix.prompt_variant(name, entries)
    matrix.report()


async def test_model_stalls(crow_home, tmp_path):
    # Each stall in a session of its own, all at once: their waits overlap. Not shorter: the healthy
    # follow-up prompt after each stall must get its first byte within these limits on a loaded machine
    # too (test_model_timeouts' 1.5 s did not, at a load of 16 on 2 cores).
    quick_config(crow_home, "model = 4\nmodel_first_byte = 3\nmodel_idle = 3\n")
    variants: list[tuple[str, list[Entry]]] = [
        ("drips a chunk a second forever", [Reply(text="drip " * 1000, chunks=1000, delay=1.0)]),
        ("stalls after the first chunk", [Reply(text="one two", chunks=2, delay=60)]),
        ("hangs after the headers", [Fault(hang=True)]),
        ("no headers for a minute", [Reply(text="late", first_delay=60)]),
    ]
    with ScriptedModel() as model:
        router = Router(model, Reply(text="here"))
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            lanes = [
                (
                    await open_matrix("model stalls", crow, model, crow_home, tmp_path, servers=[], router=router),
                    [variant],
                )
                for variant in variants
            ]
            replies = await run_lanes(lanes)
            for name, _ in variants:
                assert "timeouts.model" in replies[name]["error"]["message"], name
    report("model stalls", sum(len(matrix.variants) for matrix, _ in lanes), "nothing")


async def test_tool_faults(crow_home, tmp_path):
    quick_config(crow_home)
    faulty = lambda mode: [Reply(tool_calls=[ToolCall("faulty__fault", {"mode": mode})]), Reply(text="d")]  # noqa: E731
    # Three sessions at once, so that the waits (the MCP call limit twice, the command's timeout) overlap.
    lanes: list[list[tuple[str, list[Entry]]]] = [
        [
            (
                "a tool over its time limit",
                [Reply(tool_calls=[ToolCall("echo__slow", {"seconds": 60})]), Reply(text="d")],
            ),
            ("a tool that raises", [Reply(tool_calls=[ToolCall("echo__fail", {})]), Reply(text="d")]),
            (
                "wrong argument types",
                [Reply(tool_calls=[ToolCall("echo__add", {"a": "x", "b": [1]})]), Reply(text="d")],
            ),
            ("MCP: garbage line before the result", faulty("garbage")),
            ("MCP: a JSON array line", faulty("not_object")),
            ("MCP: a 5 MB result", faulty("huge")),
        ],
        [  # one faulty server, in this order: a server stuck on a call that hangs answers nothing after it
            ("MCP: the server exits mid-call", faulty("exit")),
            ("MCP: a call after the server died", faulty("text")),
            ("MCP: no answer", faulty("hang")),
        ],
        [
            (
                "a command over its timeout",
                [Reply(tool_calls=[ToolCall("run_command", {"command": "sleep 60", "timeout": 1})]), Reply(text="d")],
            ),
            (
                "a command with binary output",
                [
                    Reply(tool_calls=[ToolCall("run_command", {"command": "head -c 3000 /dev/urandom"})]),
                    Reply(text="d"),
                ],
            ),
        ],
    ]
    with ScriptedModel() as model:
        router = Router(model, Reply(text="here"))
        async with raw_crow(crow_env(crow_home, model.base_url)) as crow:
            matrices = [
                await open_matrix("tool faults", crow, model, crow_home, tmp_path, servers=servers, router=router)
                for servers in (SERVERS, SERVERS[1:], [])
            ]
            await run_lanes(list(zip(matrices, lanes, strict=True)))
    assert "timed out" in tool_result(model, "a tool over its time limit")
    assert "exited during the call" in tool_result(model, "MCP: the server exits mid-call")
    assert tool_result(model, "MCP: a call after the server died") == "mode text: fine"  # restarted
    assert "timed out" in tool_result(model, "MCP: no answer")
    assert "Timed out after 1 s" in tool_result(model, "a command over its timeout")
    report("tool faults", sum(len(matrix.variants) for matrix in matrices), "nothing")


def tool_result(model: ScriptedModel, variant: str) -> str:
    """What the model was told the variant's tool call returned."""
    asked = [r for r in model.requests if last_prompt(r) == variant and r["messages"][-1]["role"] == "tool"]
    assert asked, f"{variant}: no tool result reached the model"
    return asked[0]["messages"][-1]["content"]


@pytest.mark.parametrize("where", ["mid-stream", "mid-tool"])
async def test_signals_and_kills_then_restart(crow_home, tmp_path, where):
    """Stop crow in every way, restart it, load the session, prompt again."""
    quick_config(crow_home, "[sandbox]\nenabled = false\n")  # the pids are the host's: the guard on its own
    pids = tmp_path / "pids"
    command = f"echo $$ >> {pids}; sleep 300"
    stops = ["SIGTERM", "SIGINT", "SIGHUP", "stdin closed", "SIGKILL"]
    if where == "mid-stream":
        entry = Reply(text="word " * 3000, chunks=3000, delay=0.03)
        ready = lambda c: any(u["sessionUpdate"] == "agent_message_chunk" for u in c.updates)  # noqa: E731
    else:
        entry = Reply(
            tool_calls=[ToolCall("run_command", {"command": command}), ToolCall("echo__slow", {"seconds": 300})]
        )
        ready = lambda c: sum(u.get("status") == "in_progress" for u in c.updates) >= 2  # noqa: E731
    session_id, count = None, 0
    with ScriptedModel(default=Reply(text="here")) as model:
        env = crow_env(crow_home, model.base_url)
        for stop in stops:
            async with raw_crow(env) as crow:
                if session_id is None:
                    session_id = (await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": SERVERS}))[
                        "result"
                    ]["sessionId"]
                else:
                    reply = await crow.call(
                        "session/load", {"cwd": str(tmp_path), "sessionId": session_id, "mcpServers": SERVERS}
                    )
                    assert "result" in reply, reply
                    assert (await crow.prompt(session_id, FOLLOW_UP))["result"]["stopReason"] == "end_turn"
                before = said(crow_home, session_id)
                start = len(crow.received)
                model.add(entry)
                await crow.send(
                    "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": f"{stop} {where}"}]}
                )
                await crow.wait_for(lambda c, start=start: ready(_since(c, start)))
                if where == "mid-tool":
                    await eventually(pids.exists, 30)
                if stop == "SIGKILL" and where == "mid-stream":
                    early = await _streamed_on(crow, start)
                started = descendants(crow.proc.pid)
                if stop == "stdin closed":
                    assert crow.proc.stdin is not None
                    crow.proc.stdin.close()
                else:
                    crow.signal(getattr(signal, stop))
                code = await crow.drain_to_exit()
                assert code == (-signal.SIGKILL if stop == "SIGKILL" else 0), (stop, where, code)
                await eventually(lambda started=started: not any(alive(p) for p in started))
                after = said(crow_home, session_id)
                assert after[: len(before)] == before
                shown = "".join(
                    u["content"]["text"]
                    for u in _since(crow, start).updates
                    if u["sessionUpdate"] == "agent_message_chunk"
                )
                recorded = "".join(
                    m.get("content") or "" for m, _, _ in after[len(before) :] if m["role"] == "assistant"
                )
                if stop == "SIGKILL" and where == "mid-stream":
                    # the draft of the streaming reply: all that was shown a while before the kill, and
                    # nothing that was not shown (crow_acp/core/turn.py: at most DRAFT_EVERY is lost)
                    assert recorded.startswith(early) and shown.startswith(recorded), (len(early), len(recorded))
                else:
                    assert recorded == shown, (stop, where)
                assert_history_valid(crow_home, session_id, in_flight_ok=stop == "SIGKILL")
                pids.unlink(missing_ok=True)
                count += 1
        async with raw_crow(env) as crow:  # the last stop, too, leaves a session that loads and prompts
            reply = await crow.call("session/load", {"cwd": str(tmp_path), "sessionId": session_id, "mcpServers": []})
            assert (await crow.prompt(session_id, FOLLOW_UP))["result"]["stopReason"] == "end_turn"
    assert session_id is not None
    assert_history_valid(crow_home, session_id)
    assert_requests_valid(model.requests)
    lost = "SIGKILL: at most the last 0.25 s of the reply being streamed" if where == "mid-stream" else "nothing"
    report(f"signals and kills {where}, then restart", count, lost)


class _Since:
    def __init__(self, crow: RawCrow, start: int) -> None:
        self.updates = [m["params"]["update"] for m in crow.received[start:] if m.get("method") == "session/update"]


def _shown(crow: RawCrow, start: int) -> str:
    updates = _since(crow, start).updates
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


async def _streamed_on(crow: RawCrow, start: int) -> str:
    """The text shown so far, once the stream has gone on well past it (several drafts' time)."""
    early = _shown(crow, start)
    await anyio.sleep(1.5)
    later = _shown(crow, start)
    await crow.wait_for(lambda c: len(_shown(c, start)) > len(later) + 200)  # crow kept streaming after the wait
    return early


def _since(crow: RawCrow, start: int) -> _Since:
    return _Since(crow, start)
