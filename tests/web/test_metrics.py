"""`GET /metrics` of `crow serve`, read with prometheus_client's own parser: after a scripted tool turn, a
refused permission and a model error, the counters moved by exactly those amounts."""

from __future__ import annotations

import subprocess
import sys

import anyio
import httpx
import pytest
from acp import RequestError
from prometheus_client.parser import text_string_to_metric_families
from support.helpers import RecordingClient, crow_env, text, write_config
from support.serve_support import crow_serve, over_ws

from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
PROFILES = 'model = "small"\n[models.small]\nmodel = "small-1"\n[models.big]\nmodel = "big-2"\n'
USAGE = {"prompt_tokens": 120, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 100}}


def samples(body: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


def moved(before: dict, after: dict) -> dict:
    """Counters and histogram counts that changed, by how much (buckets and sums left out)."""
    return {
        key: after[key] - before.get(key, 0.0)
        for key in after
        if after[key] != before.get(key, 0.0) and key[0].endswith(("_total", "_count"))
    }


CONNECTIONS, LEASES = ("crow_connections", ()), ("crow_leases_held", ())
STORE_COUNTS = [("crow_store_seconds_count", (("kind", kind),)) for kind in ("write", "call")]


def without(counts: dict, keys: list) -> dict:
    return {key: value for key, value in counts.items() if key not in keys}


def add_user(env: dict[str, str], name: str, root: str, *extra: str) -> str:
    command = [sys.executable, "-m", "crow", "serve", "user", "add", name, "--root", root, *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=True).stdout.strip()


async def scrape(http: httpx.AsyncClient, url: str, token: str | None) -> httpx.Response:
    return await http.get(url + "/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})


async def test_metrics_count_a_tool_turn_a_refused_permission_and_a_model_error(crow_home, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    read = ToolCall("read_file", {"path": str(tmp_path / "notes.txt")}, id="r")
    run = ToolCall("run_command", {"command": "true"}, id="c")
    script = [
        Reply(text="Reading.", tool_calls=[read], usage=USAGE),
        Reply(text="done", usage=USAGE),
        Reply(tool_calls=[run], usage=USAGE),
        Reply(text="not run", usage=USAGE),
        Fault(status=400, message="bad request"),
    ]
    write_config(crow_home, PROFILES)
    async with ScriptedModel(script) as model:
        async with crow_serve(crow_env(crow_home, model.base_url), roots=(str(tmp_path),)) as served:
            with anyio.fail_after(120):
                async with httpx.AsyncClient() as http:
                    assert (await scrape(http, served.url, None)).status_code == 401
                    assert (await scrape(http, served.url, "wrong")).status_code == 401
                    start = await scrape(http, served.url, served.token)
                    assert start.status_code == 200 and start.headers["content-type"].startswith("text/plain")
                    before = samples(start.text)
                    client = RecordingClient(permission="reject_once")
                    async with over_ws(client, served) as conn:
                        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                        assert (await conn.prompt(session_id=sid, prompt=[text("read it")])).stop_reason == "end_turn"
                        await conn.set_config_option(session_id=sid, config_id="model", value="big")
                        await conn.set_session_mode(session_id=sid, mode_id="ask")
                        await conn.prompt(session_id=sid, prompt=[text("run it")])
                        assert len(client.permission_requests) == 1
                        with pytest.raises(RequestError, match="answered HTTP 400"):
                            await conn.prompt(session_id=sid, prompt=[text("fail")])
                        during = samples((await scrape(http, served.url, served.token)).text)
                    after = samples((await scrape(http, served.url, served.token)).text)
                    while after[CONNECTIONS] != 0 or after[LEASES] != 0:  # the server sees the socket close soon after
                        await anyio.sleep(0.05)
                        after = samples((await scrape(http, served.url, served.token)).text)
    assert during[CONNECTIONS] == 1 and during[LEASES] == 1  # the session's lease, given back when it closed
    store = {key: moved(before, after).get(key, 0) for key in STORE_COUNTS}
    assert all(count >= 1 for count in store.values()), store  # writes (the turns) and calls (the lease, the flush)
    small, big = (("model", "small-1"),), (("model", "big-2"),)  # the session switched after its first turn
    expected = {
        ("crow_turns_total", (("stop_reason", "end_turn"),)): 3.0,  # the model error ends its turn too
        **{("crow_model_calls_total", model): 2.0 for model in (small, big)},
        **{("crow_model_call_seconds_count", model): 2.0 for model in (small, big)},
        **{("crow_model_first_token_seconds_count", model): 2.0 for model in (small, big)},
        ("crow_model_errors_total", (("kind", "ModelError"),)): 1.0,
        ("crow_tool_calls_total", (("kind", "read"), ("outcome", "completed"))): 1.0,
        ("crow_tool_calls_total", (("kind", "execute"), ("outcome", "failed"))): 1.0,
        ("crow_tool_call_seconds_count", (("kind", "read"),)): 1.0,
        ("crow_tool_call_seconds_count", (("kind", "execute"),)): 1.0,
        ("crow_permission_questions_total", ()): 1.0,
        ("crow_permission_answers_total", (("answer", "reject_once"),)): 1.0,
        **{("crow_tokens_total", ((*model, ("type", "input")))): 240.0 for model in (small, big)},
        **{("crow_tokens_total", ((*model, ("type", "output")))): 18.0 for model in (small, big)},
        **{("crow_tokens_total", ((*model, ("type", "cached")))): 200.0 for model in (small, big)},
    }
    assert without(moved(before, after), STORE_COUNTS) == expected, moved(before, after)
    assert not any(sid in key for key in after for key in [str(key)])  # no session id in a label


async def test_metrics_need_an_admin_or_the_metrics_token(crow_home, tmp_path):
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    tokens = {"ops": add_user(env, "ops", str(tmp_path), "--admin"), "dev": add_user(env, "dev", str(tmp_path))}
    scraper = tmp_path / "scraper.token"
    scraper.write_text("s" * 40 + "\n")
    users = str(crow_home / "serve-users.toml")
    args = ("--users", users, "--metrics-token-file", str(scraper))
    async with crow_serve(env, *args, token=None, roots=(str(tmp_path),)) as served:
        with anyio.fail_after(60):
            async with httpx.AsyncClient() as http:
                assert (await scrape(http, served.url, tokens["ops"])).status_code == 200
                assert (await scrape(http, served.url, "s" * 40)).status_code == 200
                refused = await scrape(http, served.url, tokens["dev"])
                assert refused.status_code == 403 and "not an admin" in refused.text
                assert (await scrape(http, served.url, None)).status_code == 401
