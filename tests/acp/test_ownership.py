"""The ownership seam in process and over stdio: `crow acp` is the local user `default`, who sees their own
sessions as before and another user's not at all; any `_crow/*` method naming a session is checked first."""

from __future__ import annotations

import time

import anyio
import pytest
from acp import RequestError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, in_process, run_crow, text

from crow_acp import AcpAgent, load_config
from crow_acp.history import StoredMessage
from crow_acp.store import Caller, SessionRecord
from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel
from crow_acp.testing.function_model import FunctionModel

pytestmark = pytest.mark.anyio


async def stored_session(path, session_id: str, owner: str, cwd: str) -> None:
    store = SqliteStore(path)
    try:
        now = time.time()
        store.create(SessionRecord(session_id, cwd, f"{owner}'s", now, now, {"agent": "crow"}, owner))
        store.append(session_id, StoredMessage({"role": "user", "content": f"{owner} asked"}, row_id=1))
        await store.flush()
    finally:
        await store.close()


async def test_crow_acp_is_the_local_user_default(crow_home, tmp_path):
    cwd = str(tmp_path)
    await stored_session(crow_home / "sessions.db", "a" * 32, "alice", cwd)
    await stored_session(crow_home / "sessions.db", "d" * 32, "default", cwd)
    async with ScriptedModel([Reply(text="hello again")]) as model:
        client = RecordingClient()
        async with run_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(60):
                assert [s.session_id for s in (await conn.list_sessions()).sessions] == ["d" * 32]
                with pytest.raises(RequestError) as hidden:
                    await conn.load_session(cwd=cwd, session_id="a" * 32, mcp_servers=[])
                with pytest.raises(RequestError) as unknown:
                    await conn.load_session(cwd=cwd, session_id="b" * 32, mcp_servers=[])
                assert (hidden.value.code, str(hidden.value)) == (unknown.value.code, str(unknown.value))
                await conn.load_session(cwd=cwd, session_id="d" * 32, mcp_servers=[])
                assert (await conn.prompt(session_id="d" * 32, prompt=[text("more")])).stop_reason == "end_turn"
                new = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    store = SqliteStore(crow_home / "sessions.db")
    try:
        assert (await store.get(new)).owner == "default"
        assert [m.message["content"] for m in await store.load("a" * 32)] == ["alice asked"], "alice's untouched"
    finally:
        await store.close()


async def test_a_crow_extension_naming_another_users_session_never_runs(crow_home, tmp_path):
    store = SqliteStore(tmp_path / "shared.db")
    alice = AcpAgent(FunctionModel([Reply(text="ok")]), config=load_config(home=crow_home), store=store)
    bob = AcpAgent(FunctionModel([]), config=load_config(home=crow_home), store=store)
    alice.act_for(Caller("alice"))
    bob.act_for(Caller("bob"))
    ran: list[dict] = []

    async def touch(params: dict) -> dict:
        ran.append(params)
        return {}

    bob.extensions["crow/touch"] = touch
    try:
        async with in_process(alice), in_process(bob):
            sid = (await alice.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as hidden:
                await bob.ext_method("crow/touch", {"sessionId": sid})
            with pytest.raises(RequestError) as unknown:
                await bob.ext_method("crow/touch", {"sessionId": "0" * 32})
            assert hidden.value.code == unknown.value.code == -32002 and ran == []
            with pytest.raises(RequestError) as other:
                await bob.ext_method("crow/nothing", {"sessionId": sid})
            assert other.value.code == -32601, "an unknown extension is unknown for everyone"
            await bob.ext_method("crow/touch", {})
            assert ran == [{}], "one that names no session runs"
            await alice.ext_method("crow/share", {"sessionId": sid, "user": "bob", "access": "full"})
            await bob.ext_method("crow/touch", {"sessionId": sid})
            assert ran[-1] == {"sessionId": sid}
            for bad, field in (
                ({"sessionId": sid, "user": "../x", "access": "read"}, "user"),
                ({"sessionId": sid, "user": "bob", "access": "all"}, "access"),
            ):
                with pytest.raises(RequestError) as refused:
                    await alice.ext_method("crow/share", bad)
                assert refused.value.code == -32602 and field in str(refused.value.data)
    finally:
        await store.close()


class CountingStore(SqliteStore):
    """The store, counting the ownership queries it answers."""

    asked = 0

    async def access(self, session_id, caller):
        self.asked += 1
        return await super().access(session_id, caller)


async def test_an_owner_is_asked_of_the_store_once_and_anyone_else_every_time(crow_home, tmp_path):
    store = CountingStore(tmp_path / "shared.db")
    replies = [Reply(text=f"answer {n}") for n in range(4)]
    alice = AcpAgent(FunctionModel(replies), config=load_config(home=crow_home), store=store)
    bob = AcpAgent(FunctionModel(replies), config=load_config(home=crow_home), store=store)
    alice.act_for(Caller("alice"))
    bob.act_for(Caller("bob"))
    try:
        async with in_process(alice), in_process(bob):
            sid = (await alice.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            for words in ("one", "two"):
                await alice.prompt(prompt=[text(words)], session_id=sid)
            assert store.asked == 1, "a session's owner never changes: the first answer is remembered"
            await alice.ext_method("crow/share", {"sessionId": sid, "user": "bob", "access": "full"})
            await bob.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            await bob.prompt(prompt=[text("three")], session_id=sid)
            asked = store.asked
            await alice.ext_method("crow/share", {"sessionId": sid, "user": "bob", "access": "none"})
            with pytest.raises(RequestError) as gone:
                await bob.prompt(prompt=[text("four")], session_id=sid)
            assert gone.value.code == -32002, "a share taken back holds at once: bob is asked of the store"
            assert store.asked > asked
    finally:
        await store.close()


async def test_a_read_only_load_changes_nothing_of_the_owners_and_takes_nothing_from_them(crow_home, tmp_path):
    """A reader loads with roots and a system prompt of their own: the owner's stored session (data, rows) is
    as it was, the owner's open session keeps its lease (their next prompt runs), and the reader may not prompt."""
    store = SqliteStore(tmp_path / "shared.db")
    replies = [Reply(text=f"answer {n}") for n in range(3)]
    alice = AcpAgent(FunctionModel(replies), config=load_config(home=crow_home), store=store)
    bob = AcpAgent(FunctionModel([]), config=load_config(home=crow_home), store=store)
    alice.act_for(Caller("alice"))
    bob.act_for(Caller("bob"))
    elsewhere = tmp_path / "bobs"
    elsewhere.mkdir()
    seen = RecordingClient()
    bob.on_connect(seen)
    try:
        async with in_process(alice), in_process(bob):
            sid = (await alice.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await alice.prompt(prompt=[text("one")], session_id=sid)
            await store.flush()
            before = (await store.get(sid)).data, [m.message for m in await store.load(sid)]
            await alice.ext_method("crow/share", {"sessionId": sid, "user": "bob", "access": "read"})
            prompt = {"mode": "override", "content": [{"type": "text", "text": "bob's own instructions"}]}
            await bob.load_session(
                cwd=str(elsewhere), session_id=sid, mcp_servers=[], additional_directories=[], system_prompt=prompt
            )
            assert "answer 0" in str(seen.updates), "the reader sees the conversation"
            with pytest.raises(RequestError) as refused:
                await bob.prompt(prompt=[text("bob writes")], session_id=sid)
            assert refused.value.code == -32602 and "read-only" in str(refused.value.data)
            await store.flush()
            assert ((await store.get(sid)).data, [m.message for m in await store.load(sid)]) == before
            assert (await alice.prompt(prompt=[text("two")], session_id=sid)).stop_reason == "end_turn"
            assert [m.message["content"] for m in await store.load(sid)][-1] == "answer 1"
    finally:
        await store.close()


async def test_a_reader_who_loads_during_the_owners_turn_does_not_stop_or_change_it(crow_home, tmp_path):
    """Bob's read-only load lands while Alice's turn waits on the model: her turn is not cancelled nor its lease
    taken, it ends as it would have, and what it recorded is hers alone."""
    store = SqliteStore(tmp_path / "shared.db")
    loaded, asked = anyio.Event(), anyio.Event()

    async def waits_for_bob(request: dict) -> Reply:
        asked.set()
        await loaded.wait()
        return Reply(text="after bob looked")

    alice = AcpAgent(
        FunctionModel([Reply(text="first"), waits_for_bob]), config=load_config(home=crow_home), store=store
    )
    bob = AcpAgent(FunctionModel([]), config=load_config(home=crow_home), store=store)
    alice.act_for(Caller("alice"))
    bob.act_for(Caller("bob"))
    stops: list[str] = []
    try:
        async with in_process(alice), in_process(bob):
            sid = (await alice.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await alice.prompt(prompt=[text("one")], session_id=sid)
            await alice.ext_method("crow/share", {"sessionId": sid, "user": "bob", "access": "read"})

            async def second() -> None:
                stops.append((await alice.prompt(prompt=[text("two")], session_id=sid)).stop_reason)

            async with anyio.create_task_group() as tg:
                tg.start_soon(second)
                with anyio.fail_after(60):
                    await asked.wait()
                await bob.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                loaded.set()
            await store.flush()
            record = await store.get(sid)
            contents = [m.message.get("content") for m in await store.load(sid)]
    finally:
        await store.close()
    assert stops == ["end_turn"], "the reader's load neither cancelled the owner's turn nor took its lease"
    assert contents[-1] == "after bob looked" and contents.count("two") == 1
    assert record is not None and record.owner == "alice"
