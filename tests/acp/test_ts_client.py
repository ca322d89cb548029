"""`crow acp` driven by the TypeScript ACP SDK (@agentclientprotocol/sdk), the client editors embed:
config options (model, thinking level, mode), the older mode API, a prompt, cost, and fork; and, as a client
that opts into them (ts_client/notices.mjs), notices and compaction updates.

The SDK is installed from the lock file on first use (tests/support/node_deps.py, once for all xdist workers), so the
README's one test command is enough; the test runs offline after that.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from support.compact_brain import FILLER, Brain
from support.helpers import TESTS, crow_env, write_config
from support.node_deps import ensure_node_modules
from support.zod_check import problems

from crow_acp.testing import Reply, ScriptedModel, ToolCall

CLIENT = Path(__file__).resolve().parents[1] / "ts_client"
PROFILES = """
model = "thinker"
[models.thinker]
model = "thinker-id"
reasoning = true
input_price = 2.0
output_price = 8.0
[models.plain]
model = "plain-id"
"""


def run_client(env: dict[str, str], script: str = "client.mjs") -> dict:
    node = shutil.which("node")
    assert node, "node is needed for the TypeScript SDK test (apt-get install nodejs npm)"
    ensure_node_modules()
    done = subprocess.run([node, str(CLIENT / script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_typescript_sdk_sees_and_sets_the_config_options(crow_home, tmp_path):
    write_config(crow_home, PROFILES)
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    with ScriptedModel(default=Reply(text="hi from crow", usage=usage)) as model:
        env = crow_env(crow_home, model.base_url)
        env |= {"CROW_COMMAND": json.dumps([sys.executable, "-m", "crow", "acp"]), "CROW_CWD": str(tmp_path)}
        seen = run_client(env)

    caps = seen["capabilities"]
    assert caps["promptCapabilities"]["image"] is True and "fork" in caps["sessionCapabilities"]
    created = seen["created"]["options"]
    assert created["model"] == {"category": "model", "current": "thinker", "values": ["thinker", "plain"]}
    assert created["thought_level"] == {
        "category": "thought_level",
        "current": "medium",
        "values": ["low", "medium", "high"],
    }
    assert created["mode"]["category"] == "mode" and created["mode"]["current"] == "ask"
    assert set(created["mode"]["values"]) == {"ask", "accept_edits", "auto", "plan", "full_access"}
    assert seen["created"]["modes"]["currentModeId"] == "ask"

    assert seen["thought"]["thought_level"]["current"] == "high"
    assert seen["plan"]["mode"]["current"] == "plan"
    assert seen["badThought"] == seen["badMode"] == -32602
    assert seen["stopReason"] == "end_turn"
    assert "thought_level" not in seen["plain"]  # the plain profile does not reason: no picker
    assert seen["fork"]["different"] and seen["fork"]["options"]["mode"]["current"] == "accept_edits"
    assert seen["listed"] == 2

    kinds = [u["sessionUpdate"] for u in seen["updates"]]
    modes = [u["currentModeId"] for u in seen["updates"] if u["sessionUpdate"] == "current_mode_update"]
    assert modes[-1] == "accept_edits"  # session/set_mode, the older API, is acknowledged too
    assert "config_option_update" in kinds
    [usage_update] = [u for u in seen["updates"] if u["sessionUpdate"] == "usage_update"]
    assert usage_update["cost"] == {"amount": 0.006, "currency": "USD"} and usage_update["size"] == 128000
    assert (
        "".join(u["content"]["text"] for u in seen["updates"] if u["sessionUpdate"] == "agent_message_chunk")
        == "hi from crow"
    )
    assert model.requests[0]["reasoning_effort"] == "high"


def test_the_typescript_sdk_sees_notices_and_compaction_updates(crow_home, tmp_path):
    """A client of the SDK that opts into notices and compaction updates (ACP 1.25) gets them, parsed."""
    write_config(
        crow_home, 'model = "fast"\n[models.default]\nmodel = "m"\n[compaction]\nthreshold = 300\nkeep_last = 2\n'
    )
    prompts = [f"turn one [p=100] {FILLER}", f"turn two [p=200] {FILLER}", "turn three [p=420]"]
    with ScriptedModel(default=Brain()) as model:
        env = crow_env(crow_home, model.base_url)
        env |= {"CROW_COMMAND": json.dumps([sys.executable, "-m", "crow", "acp"]), "CROW_CWD": str(tmp_path)}
        seen = run_client(env | {"CROW_PROMPTS": json.dumps(prompts)}, "notices.mjs")

    assert seen["stopReasons"] == ["end_turn"] * 3
    [notice] = [u for u in seen["updates"] if u["sessionUpdate"] == "notice"]
    assert notice["severity"] == "warning" and "'fast' is not a profile" in notice["description"]
    compaction = [u for u in seen["updates"] if u["sessionUpdate"].startswith("compaction_")]
    assert [(u["sessionUpdate"], u.get("status")) for u in compaction] == [
        ("compaction_update", "in_progress"),
        ("compaction_summary_chunk", None),
        ("compaction_update", "completed"),
    ]
    assert compaction[1]["content"]["text"].startswith("SUMMARY-1")
    assert not [u for u in seen["updates"] if u.get("title") == "Compacting context"]


def test_the_typescript_sdk_answers_an_mcp_servers_question(crow_home, tmp_path):
    """Issue 20 item 2: the SDK client opts into form elicitation and answers the question an MCP server asks
    in the middle of a tool call; the answer reaches the server, whose result the model reads."""
    write_config(crow_home, PROFILES)  # the client's first part sets the thinking level
    server = {
        "name": "elicit",
        "command": sys.executable,
        "args": [str(TESTS / "mcp_servers" / "elicit_server.py")],
        "env": [],
    }
    answer = {"action": "accept", "content": {"seat": "window", "name": "Ada"}}
    book = ToolCall("elicit__book", {"flight": "LH1"}, id="call_b")
    script = [Reply(text="hi from crow"), Reply(tool_calls=[book]), Reply(text="booked")]
    with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url) | {
            "CROW_COMMAND": json.dumps([sys.executable, "-m", "crow", "acp"]), "CROW_CWD": str(tmp_path),
            "CROW_ELICIT_SERVER": json.dumps(server), "CROW_ELICIT_ANSWER": json.dumps(answer),
        }  # fmt: skip
        seen = run_client(env)
    elicitation = seen["elicitation"]
    assert elicitation["stopReason"] == "end_turn"
    [asked] = elicitation["asked"]
    assert (
        asked["sessionId"] == elicitation["sessionId"] and asked["toolCallId"] == "call_b" and asked["mode"] == "form"
    )
    assert problems([("zCreateElicitationRequest", asked)]) == []
    told = [m["content"] for r in model.requests for m in r["messages"] if m.get("tool_call_id") == "call_b"]
    assert told[0] == 'server saw {"action": "accept", "content": {"name": "Ada", "seat": "window"}}'
