"""Bounded work: every file tool costs no more than its answer, no pattern hangs a search, a cancel
stops a tool at once, and other sessions keep answering while one tool works."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from support.editor_support import drive, results
from support.helpers import RecordingClient, crow_env, run_crow, text
from support.hosted import hosted_crow

from crow_acp.editor.search import MAX_ENTRIES
from crow_acp.testing import Reply, ScriptedModel, ToolCall

GIB = 1 << 30


def sparse(path: Path, size: int, head: bytes = b"", tail: bytes = b"") -> None:
    """A file of `size` bytes of hole between head and tail: costs no disk."""
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
        handle.seek(size)
        handle.write(tail)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.anyio
async def test_a_huge_sparse_file_costs_no_more_than_the_answer(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    sparse(work / "big.log", GIB, b"first line\n", b"\nlast line\n")  # line 2: one enormous line of NULs
    calls = [
        ToolCall("read_file", {"path": "big.log", "limit": 1}, id="head"),
        ToolCall("read_file", {"path": "big.log"}, id="whole"),
        ToolCall("read_file", {"path": "big.log", "line": 3}, id="tail"),
        ToolCall("edit_file", {"path": "big.log", "old_string": "last", "new_string": "x"}, id="edit"),
    ]
    script = [Reply(tool_calls=[call]) for call in calls]
    with ScriptedModel(script, default=Reply(text="done")) as model:
        async with run_crow(RecordingClient(), crow_env(tmp_path / "home", model.base_url), cwd=str(work)) as (
            conn,
            proc,
        ):
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            assert (await conn.prompt(session_id=session.session_id, prompt=[text("go")])).stop_reason == "end_turn"
            peak = peak_rss_mb(proc.pid)
    got = results(model)
    assert got["head"] == "first line\n\n[... more lines follow: pass line=2 to read on ...]"
    lines = got["whole"].splitlines()
    assert lines[0] == "first line" and lines[-1] == "last line"
    assert f"[... line cut: {GIB - 11 - 2000 + 1} more bytes ...]" in lines[1]  # the NUL line, cut
    assert len(got["whole"]) < 10_000
    assert got["tail"] == "last line\n"
    assert "larger than" in got["edit"]  # too large to edit: refused before it is read whole
    assert peak < 400, f"crow's peak RSS was {peak:.0f} MB for a 1 GiB file"


@pytest.mark.anyio
async def test_search_is_linear_respects_gitignore_and_is_capped(tmp_path):
    work = tmp_path / "work"
    (work / "ignored").mkdir(parents=True)
    (work / "a.txt").write_text("a" * 50_000 + "\n" + "x" * 40 + "\nneedle 1\nneedle 2\nneedle 3\n")
    (work / ".gitignore").write_text("ignored/\n")
    (work / "ignored" / "b.txt").write_text("needle hidden\n")
    calls = [
        ToolCall("search_files", {"pattern": "(a*)*b"}, id="nested"),  # catastrophic for a backtracking engine
        ToolCall("search_files", {"pattern": "(x+x+)+y"}, id="evil"),
        ToolCall("search_files", {"pattern": "(a{1000}){1000}"}, id="huge"),  # too large to compile: literal
        ToolCall("search_files", {"pattern": "needle"}, id="ignore"),
        ToolCall("search_files", {"pattern": "needle", "max_results": 2}, id="capped"),
        ToolCall("search_files", {"pattern": "a"}, id="long"),
    ]
    _, model = await drive(RecordingClient(), tmp_path, work, calls)
    got = results(model)
    assert got["nested"] == got["evil"] == got["huge"] == "No matches."
    assert got["ignore"].splitlines() == ["a.txt:3: needle 1", "a.txt:4: needle 2", "a.txt:5: needle 3"]
    assert got["capped"].splitlines() == ["a.txt:3: needle 1", "a.txt:4: needle 2",
                                          "[... stopped after 2 matches; narrow the search ...]"]  # fmt: skip
    assert len(got["long"]) < 1000  # the 50 000 character line is shown cut


@pytest.mark.anyio
async def test_a_huge_directory_lists_only_what_is_shown(tmp_path):
    work = tmp_path / "work"
    crowd = work / "crowd"
    crowd.mkdir(parents=True)
    for index in range(20_000):
        (crowd / f"f{index:05}").touch()
    calls = [
        ToolCall("list_files", {"path": "crowd"}, id="flat"),
        ToolCall("list_files", {"recursive": True}, id="tree"),
    ]
    _, model = await drive(RecordingClient(), tmp_path, work, calls)
    for cid in ("flat", "tree"):
        lines = results(model)[cid].splitlines()
        assert len(lines) == MAX_ENTRIES + 1
        assert lines[-1] == f"[... stopped after {MAX_ENTRIES} entries; list a subdirectory ...]"


@pytest.mark.anyio
async def test_other_sessions_answer_while_a_tool_works_and_a_cancel_stops_it(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    sparse(work / "endless.log", 1 << 40)  # 1 TiB of hole: scanning it for line 10^12 would take hours
    scan = ToolCall("read_file", {"path": "endless.log", "line": 10**12}, id="scan")
    client = RecordingClient()
    with ScriptedModel(
        [Reply(tool_calls=[scan]), Reply(text="other session answers")], default=Reply(text="done")
    ) as model:
        async with hosted_crow(client, crow_env(tmp_path / "home", model.base_url), cwd=str(work)) as (conn, _):
            busy = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            other = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            async with anyio.create_task_group() as group:
                stops: list[str] = []

                async def run_busy() -> None:
                    stops.append((await conn.prompt(session_id=busy, prompt=[text("scan")])).stop_reason)

                group.start_soon(run_busy)
                running = lambda c: any(getattr(u, "status", None) == "in_progress" for u in c.tool_updates("scan"))  # noqa: E731
                await client.wait_for(running, timeout=60)
                with anyio.fail_after(60):
                    assert (await conn.prompt(session_id=other, prompt=[text("hi")])).stop_reason == "end_turn"
                assert not [
                    u for u in client.tool_updates("scan") if u.status in ("completed", "failed")
                ]  # still scanning
                begun = time.monotonic()
                await conn.cancel(session_id=busy)
            cancel_took = time.monotonic() - begun
    assert stops == ["cancelled"]
    assert "other session answers" in client.text()
    assert cancel_took < 10  # ACP asks for 1 s; the generous bound keeps a loaded machine green (benchmarks time it)
