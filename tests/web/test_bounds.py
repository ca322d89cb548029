"""A `crow serve` token holder as the attacker was: cwd "/", additionalDirectories ["/root"], full access
and a command outside the sandbox. The operator's --root and --max-mode bound all of it."""

from __future__ import annotations

import anyio
import pytest
from acp import RequestError
from support.helpers import RecordingClient, crow_env, text
from support.records import results
from support.serve_support import crow_serve, over_ws

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def refused(call) -> RequestError:
    with pytest.raises(RequestError) as raised:
        await call
    assert raised.value.code == -32602
    return raised.value


async def test_paths_outside_the_roots_and_modes_above_the_cap_are_refused(crow_home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "up").symlink_to("/")  # inside the root by name, "/" once resolved
    root = str(work.resolve())
    marker = tmp_path / "ran-outside"
    off = ToolCall("run_command", {"command": f"touch {marker}", "sandbox": "off"}, id="off")
    client = RecordingClient(permission="allow_once")  # a token holder answers its own questions
    async with ScriptedModel([Reply(text="Trying.", tool_calls=[off]), Reply(text="done")]) as model:
        async with crow_serve(crow_env(crow_home, model.base_url), roots=(str(work),)) as served:
            with anyio.fail_after(90):
                async with over_ws(client, served) as conn:
                    error = await refused(conn.new_session(cwd="/", mcp_servers=[]))
                    assert "cwd / is outside this server's roots" in str(error) and root in str(error)
                    error = await refused(conn.new_session(cwd=root, additional_directories=["/root"]))
                    assert "additionalDirectories /root" in str(error)
                    error = await refused(conn.new_session(cwd=str(work / "up")))
                    assert "(resolved: /)" in str(error)
                    await refused(conn.new_session(cwd=f"{root}/../.."))
                    sid = (await conn.new_session(cwd=root, mcp_servers=[])).session_id
                    error = await refused(conn.set_session_mode(session_id=sid, mode_id="full_access"))
                    assert "above this server's cap, 'auto'" in str(error)
                    await refused(conn.set_config_option(config_id="mode", session_id=sid, value="full_access"))
                    await conn.set_session_mode(session_id=sid, mode_id="auto")  # up to the cap: fine
                    await conn.prompt(session_id=sid, prompt=[text("/mode full_access")])
                    assert "Not switched" in client.text()
                    assert (await conn.prompt(session_id=sid, prompt=[text("escape")])).stop_reason == "end_turn"
                    await refused(conn.load_session(cwd="/", session_id=sid, mcp_servers=[]))
                    await refused(conn.resume_session(cwd=str(work / "up"), session_id=sid, mcp_servers=[]))
    told = results(model.requests[-1])
    assert "caps the permission mode at 'auto'" in told["off"]
    assert not marker.exists() and client.permission_requests == []  # never run, never even asked


async def test_full_access_needs_the_operator(crow_home, tmp_path):
    marker = tmp_path / "ran-outside"
    off = ToolCall("run_command", {"command": f"touch {marker}", "sandbox": "off"}, id="off")
    async with ScriptedModel([Reply(tool_calls=[off]), Reply(text="done")]) as model:
        env = crow_env(crow_home, model.base_url)
        async with crow_serve(env, "--max-mode", "full_access", roots=(str(tmp_path),)) as served:
            with anyio.fail_after(90):
                async with over_ws(RecordingClient(), served) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    await conn.set_session_mode(session_id=sid, mode_id="full_access")
                    assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"
    assert marker.exists()  # the operator allowed it: the cap, not a ban


async def test_a_stored_full_access_session_and_the_configs_default_run_at_the_cap(crow_home, tmp_path):
    (crow_home / "config.toml").write_text('[permissions]\ndefault_mode = "full_access"\n')
    marker = tmp_path / "ran-outside"
    off = ToolCall("run_command", {"command": f"touch {marker}", "sandbox": "off"}, id="off")
    async with ScriptedModel([Reply(tool_calls=[off]), Reply(text="done")]) as model:
        env = crow_env(crow_home, model.base_url)
        async with crow_serve(env, "--max-mode", "full_access", roots=(str(tmp_path),)) as served:
            async with over_ws(RecordingClient(), served) as conn:
                opened = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                assert opened.modes.current_mode_id == "full_access"  # stored so
        async with crow_serve(env, roots=(str(tmp_path),)) as served:  # the default cap: auto
            with anyio.fail_after(90):
                async with over_ws(RecordingClient(), served) as conn:
                    loaded = await conn.load_session(cwd=str(tmp_path), session_id=opened.session_id, mcp_servers=[])
                    assert loaded.modes.current_mode_id == "auto"
                    assert "full_access" not in [m.id for m in loaded.modes.available_modes]
                    await conn.prompt(session_id=opened.session_id, prompt=[text("escape")])
                    fresh = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                    assert fresh.modes.current_mode_id == "auto"  # the config's full_access default, capped
    assert "caps the permission mode at 'auto'" in results(model.requests[-1])["off"]
    assert not marker.exists()
