"""The seeds' orchestration patterns: loop with a judge, supervisor, planner/executor, parallel, progress.

In process: the graphs of tests/agents/multi_agents.py with one FunctionModel per agent, and a
RecordingClient as the editor. multi/test_multi_agent.py drives graphs over ACP stdio.
"""

from __future__ import annotations

import anyio
import pytest
from support.helpers import RecordingClient, text
from support.multi_support import all_text, functions, in_process, last_user, titles
from support.zod_check import problems

from crow.patterns import parse_verdict
from crow_acp.acp.rpc.shapes import ClientFeatures
from crow_acp.testing import Fault, Reply, ToolCall

pytestmark = pytest.mark.anyio


async def prompt_once(client, factory, home, models, tmp_path, words, monkeypatch, **kwargs):
    async with in_process(client, factory, home, models, monkeypatch, **kwargs) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            return await conn.prompt(session_id=sid, prompt=[text(words)])


async def test_loop_runs_until_the_judge_says_stop(crow_home, tmp_path, monkeypatch):
    scripts = {
        "coder": [Reply(text="V1"), Reply(text="V2"), Reply(text="SUMMARY OF THE WORK")],  # the last: /compact
        "reviewer": [Reply(text="R1: missing tests"), Reply(text="R2: good")],
        "judge": [Reply(text="CONTINUE: add tests"), Reply(text="STOP: tests are there")],
    }
    client = RecordingClient()
    models = functions(**scripts)
    async with in_process(client, "build_loop", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[text("write add")])
            # A slash command is the entry's, not a task for the loop: no reviewer, no judge.
            command = await conn.prompt(session_id=sid, prompt=[text("/compact")])
    assert response.stop_reason == "end_turn" and command.stop_reason == "end_turn"
    coder, reviewer, judge = models["coder"], models["reviewer"], models["judge"]
    assert [len(coder.requests), len(reviewer.requests), len(judge.requests)] == [3, 2, 2]
    assert last_user(coder.requests[0]) == "write add"
    assert last_user(coder.requests[1]) == "The judge asks for another pass: add tests"
    assert [last_user(r) for r in reviewer.requests] == ["V1", "V2"]
    first_verdict = last_user(judge.requests[0])  # the task and the sequential pass's result (the reviewer's)
    assert "write add" in first_verdict and "R1: missing tests" in first_verdict and "V1" not in first_verdict
    assert "STOP:" in all_text(judge.requests[0])  # the judge preset's prompt documents the format
    shown = titles(client)
    assert ("Judge: continue (1/3)", "completed") in shown and ("Judge: stop (2/3)", "completed") in shown
    assert shown.index(("Judge: continue (1/3)", "completed")) < shown.index(("judge → coder", "in_progress"))


async def test_loop_stops_at_max_iterations(crow_home, tmp_path, monkeypatch):
    client = RecordingClient()
    defaults = {"coder": Reply(text="V"), "reviewer": Reply(text="R"), "judge": Reply(text="CONTINUE: more")}
    models = functions(**defaults)
    response = await prompt_once(
        client, "build_loop", crow_home, models, tmp_path, "go", monkeypatch, env={"LOOP_MAX": "2"}
    )
    assert response.stop_reason == "max_turn_requests"
    assert [len(models[n].requests) for n in ("coder", "reviewer", "judge")] == [2, 2, 2]
    assert ("Loop stopped after 2 passes", "failed") in titles(client)


def test_verdicts_parse_stop_continue_json_and_nothing():
    assert parse_verdict("**STOP**: all good\nmore") == parse_verdict("stop - all good")
    assert parse_verdict("CONTINUE: add tests").stop is False
    assert parse_verdict('{"decision": "continue", "reason": "x"}').reason == "x"
    unclear = parse_verdict("Stopping soon, maybe")
    assert unclear.stop and not unclear.clear


def route_by_state(request: dict) -> Reply:
    state = last_user(request)
    for name in ("emma", "bob"):
        if f"## {name}\n" not in state:
            return Reply(text=name)
    return Reply(text="DONE")


async def test_supervisor_routes_by_the_shared_state_and_completes(crow_home, tmp_path, monkeypatch):
    scripts = {
        "router": route_by_state,
        "emma": [Reply(text="PRD: a todo app")],
        "bob": [Reply(text="ARCH: react + sqlite")],
        "alex": [Reply(text="CODE")],
    }
    client = RecordingClient()
    models = functions(**scripts)
    response = await prompt_once(
        client, "build_supervisor", crow_home, models, tmp_path, "build a todo app", monkeypatch
    )
    assert response.stop_reason == "end_turn"
    router = models["router"].requests
    assert (
        len(router) == 3 and "(none yet)" in last_user(router[0]) and "## emma\nPRD: a todo app" in last_user(router[1])
    )
    assert router[0]["messages"][0]["role"] == "system" and "DONE" in router[0]["messages"][0]["content"]
    assert last_user(models["emma"].requests[0]) == "build a todo app"
    bob_saw = last_user(models["bob"].requests[0])
    assert "build a todo app" in bob_saw and "## emma\nPRD: a todo app" in bob_saw
    assert models["alex"].requests == []
    shown = titles(client)
    assert [t for t, s in shown if s == "in_progress"] == ["router → emma", "router → bob"]
    assert ("Supervisor: done", "completed") in shown
    assert [u.title for u in client.of("session_info_update")] == ["build a todo app"]


async def test_cancel_while_the_router_decides_stops_the_run(crow_home, tmp_path, monkeypatch):
    deciding = anyio.Event()

    def slow_router(request: dict) -> Reply:
        deciding.set()
        return Reply(text="emma", first_delay=30)

    scripts = {"router": [slow_router], "emma": [Reply(text="PRD")], "bob": [], "alex": []}
    client = RecordingClient()
    models = functions(**scripts)
    async with in_process(client, "build_supervisor", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            result = {}
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    result["response"] = await conn.prompt(session_id=sid, prompt=[text("build it")])

                group.start_soon(run)
                await deciding.wait()
                await conn.cancel(session_id=sid)
    assert result["response"].stop_reason == "cancelled"
    assert models["emma"].requests == []


def mark(step: int, status: str, notes: str = "") -> Reply:
    return Reply(tool_calls=[ToolCall("mark_step", {"step_index": step, "status": status, "notes": notes})])


async def test_planner_plan_is_one_plan_id_for_an_editor_with_plan_operations(crow_home, tmp_path, monkeypatch):
    scripts = {
        "planner": [
            Reply(tool_calls=[ToolCall("create_plan", {"title": "Add", "steps": ["write add"]})]),
            Reply(text="Planned."),
        ],
        "executor": [mark(1, "completed"), Reply(text="Done.")],
    }
    client, reloaded = RecordingClient(), RecordingClient()
    models, features = functions(**scripts), ClientFeatures(plan=True)
    async with in_process(client, "build_planner", crow_home, models, monkeypatch, features=features) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text("add two numbers")])
    async with in_process(reloaded, "build_planner", crow_home, models, monkeypatch, features=features) as conn:
        with anyio.fail_after(60):
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            await reloaded.wait_for(lambda c: c.of("plan_update"))
    shown = [[(u.plan.plan_id, e.content, e.status) for e in u.plan.entries] for u in client.of("plan_update")]
    assert shown == [[("planner", "write add", "pending")], [("planner", "write add", "completed")]]
    assert client.of("plan") == [] and reloaded.of("plan") == []
    assert [u.plan.plan_id for u in reloaded.of("plan_update")] == ["planner"]  # shown again on load
    sent = [("zSessionNotification", {"sessionId": sid, "update": u.model_dump(mode="json", by_alias=True,
             exclude_none=True)}) for u in client.updates + reloaded.updates]  # fmt: skip
    assert problems(sent) == []


async def test_planner_executor_plan_reaches_the_editor(crow_home, tmp_path, monkeypatch):
    scripts = {
        "planner": [
            Reply(tool_calls=[ToolCall("create_plan", {"title": "Add", "steps": ["write add", "test add"]})]),
            Reply(text="Planned two steps."),
            Reply(tool_calls=[ToolCall("update_plan", {"steps": ["write add", "test add with a fake db"]})]),
            Reply(text="Revised."),
        ],
        "executor": [
            mark(1, "in_progress"),
            mark(1, "completed"),
            mark(2, "blocked", "no database"),
            Reply(text="Step 2 blocked."),
            mark(2, "completed"),
            Reply(text="All done."),
        ],
    }
    client, reloaded = RecordingClient(), RecordingClient()
    models = functions(**scripts)
    async with in_process(client, "build_planner", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[text("add two numbers")])
    async with in_process(reloaded, "build_planner", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(60):
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            await reloaded.wait_for(lambda c: c.of("plan"))
    assert response.stop_reason == "end_turn"
    plans = [[(e.content, e.status) for e in u.entries] for u in client.of("plan")]
    assert plans == [
        [("write add", "pending"), ("test add", "pending")],
        [("write add", "in_progress"), ("test add", "pending")],
        [("write add", "completed"), ("test add", "pending")],
        [("write add", "completed"), ("[blocked] test add — no database", "pending")],
        [("write add", "completed"), ("test add with a fake db", "pending")],
        [("write add", "completed"), ("test add with a fake db", "completed")],
    ]
    assert "1. [pending] write add" in last_user(models["executor"].requests[0])
    assert "2. [blocked] test add (no database)" in last_user(models["planner"].requests[2])
    assert client.permission_requests == []  # plan tools only touch the plan
    # Loading the session shows the stored plan again (plan updates are not part of the history).
    assert [[(e.content, e.status) for e in u.entries] for u in reloaded.of("plan")] == [plans[-1]]


async def test_parallel_runs_members_concurrently_and_survives_a_failure(crow_home, tmp_path, monkeypatch):
    asked = {"alpha": anyio.Event(), "beta": anyio.Event()}

    def waits_for(other: str, answer: str):
        async def respond(request: dict) -> Reply:
            asked[answer.split("-")[0].lower()].set()
            await asked[other].wait()  # run one after the other, and this would never return
            return Reply(text=answer)

        return respond

    scripts = {
        "alpha": [waits_for("beta", "ALPHA-RESULT")],
        "beta": [waits_for("alpha", "BETA-RESULT")],
        "gamma": [Fault(400, "gamma broke")],
        "merger": [Reply(text="MERGED")],
    }
    client = RecordingClient()
    models = functions(**scripts)
    async with in_process(client, "build_parallel", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[text("do it")])
    assert response.stop_reason == "end_turn"
    merged = last_user(models["merger"].requests[0])
    assert "## alpha\nALPHA-RESULT" in merged and "## beta\nBETA-RESULT" in merged
    assert "## gamma (failed: " in merged and "gamma broke" in merged
    assert ("→ gamma", "failed") in titles(client) and ("→ alpha", "completed") in titles(client)
    assert "**merger:** MERGED" in client.text()


async def test_progress_summaries_show_a_note_every_n_tool_calls(crow_home, tmp_path, monkeypatch):
    lookups = [Reply(tool_calls=[ToolCall("lookup", {"key": key})]) for key in "abc"]
    scripts = {"coder": [*lookups, Reply(text="done")], "summarizer": Reply(text="Looked up a and b.")}
    client = RecordingClient()
    models = functions(**scripts)
    response = await prompt_once(client, "build_progress", crow_home, models, tmp_path, "look things up", monkeypatch)
    assert response.stop_reason == "end_turn"
    asked = models["summarizer"].requests
    assert len(asked) == 1  # two events make a note; the third is left when the turn ends
    seen = all_text(asked[0])
    assert "TOOL-OUTPUT-a" in seen and "TOOL-OUTPUT-b" in seen and "TOOL-OUTPUT-c" not in seen
    notes = [u for u in client.of("tool_call") if u.title.startswith("Progress:")]
    assert [(u.title, u.kind) for u in notes] == [("Progress: Looked up a and b.", "think")]
