"""The delegation budget, against the fan-out that made 421 helper sessions from one prompt: a reply of 20
delegate calls gets 16 helpers; helpers that keep calling the model stop at the prompt's budget of calls,
at every depth together; the model is told why each time; the next prompt has a budget of its own."""

from __future__ import annotations

import pytest
from support.matrix_support import last_prompt
from test_delegate import asked_by, by_prompt, crow_for, delegate, tool_results

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def configure(home, extra: str = "", mode: str = "auto") -> None:
    (home / "config.toml").write_text(
        f'[delegate]\nenabled = true\nagents = ["crow"]\nmax_depth = 2\n{extra}[permissions]\ndefault_mode = "{mode}"\n'
    )


def helper_requests(model: ScriptedModel) -> list[dict]:
    return [r for r in model.requests if last_prompt(r).startswith("TASK")]


@pytest.mark.parametrize("mode", ["auto", "plan"])
async def test_a_twenty_delegate_reply_gets_sixteen_helpers(crow_home, tmp_path, mode):
    configure(crow_home, mode=mode)
    calls = [delegate(f"TASK-{n}", f"call_{n}") for n in range(20)]
    async with ScriptedModel() as model:
        turns = {f"TASK-{n}": (lambda k, n=n: Reply(text=f"ANSWER-{n}")) for n in range(20)}
        turns["go"] = lambda k: Reply(tool_calls=calls) if k == 0 else Reply(text="PARENT-DONE")
        turns["again"] = lambda k: Reply(tool_calls=[delegate("TASK-0", "call_again")]) if k == 0 else Reply(text="ok")
        model.default = by_prompt(model, turns)
        async with crow_for(crow_home, model, tmp_path, None) as crow:
            parent = await crow.new_session(str(tmp_path))
            assert (await crow.prompt(parent, "go"))["result"]["stopReason"] == "end_turn"
            told = tool_results(asked_by(model, "go")[-1])
            assert (await crow.prompt(parent, "again"))["result"]["stopReason"] == "end_turn"
    refused = {call: text for call, text in told.items() if text.startswith("Not delegated")}
    assert len(told) == 20 and len(refused) == 4
    assert all("its 16 helper sessions" in text for text in refused.values())
    assert len(helper_requests(model)) == 17  # 16 helpers, one call each; then the next prompt's one
    assert tool_results(asked_by(model, "again")[-1])["call_again"] == "ANSWER-0"  # a new prompt, a new budget


async def test_helpers_stop_at_the_prompts_model_calls_at_every_depth(crow_home, tmp_path):
    configure(crow_home, "max_helper_calls = 5\n")

    def spinning(task: str):  # a helper that never stops calling tools, so the model, again
        return lambda k: Reply(tool_calls=[ToolCall("list_files", {"path": "."}, id=f"{task}_{k}")])

    async with ScriptedModel() as model:
        model.default = by_prompt(
            model,
            {
                "go": lambda k: Reply(tool_calls=[delegate("TASK-A", "a")]) if k == 0 else Reply(text="PARENT-DONE"),
                # The helper delegates in turn: its helper's calls count against the same prompt.
                "TASK-A": lambda k: Reply(tool_calls=[delegate("TASK-B", "b")]) if k == 0 else spinning("A")(k),
                "TASK-B": spinning("B"),
            },
        )
        async with crow_for(crow_home, model, tmp_path, None) as crow:
            parent = await crow.new_session(str(tmp_path))
            assert (await crow.prompt(parent, "go"))["result"]["stopReason"] == "end_turn"
    assert len(helper_requests(model)) == 5
    [told] = tool_results(asked_by(model, "go")[-1]).values()
    assert "the delegation budget is spent" in told and "5 model calls" in told
