"""Confinement without races: file tools open paths component by component and never leave the roots."""

from __future__ import annotations

import os
import socket
import textwrap

import pytest
from support.editor_support import EDITOR_CAPS, EditorClient, drive, final, results
from support.helpers import RecordingClient
from support.swap_support import tool_answers_while_swapping

from crow_acp.testing import Reply, ToolCall

SWAPPER = textwrap.dedent(
    """
    import os, sys
    victim, outside_read, outside_write, stop = sys.argv[1:5]
    swaps = 0
    while not os.path.exists(stop):
        for target in (outside_read, outside_write):
            link = victim + ".lnk"
            try:
                os.symlink(target, link)
                os.replace(link, victim)          # now a symlink to outside
                with open(victim + ".reg", "w") as f:
                    f.write("inside\\n")
                os.replace(victim + ".reg", victim)  # a regular file again
            except OSError:
                pass
            swaps += 1
    print(swaps)
    """
)


@pytest.mark.anyio
async def test_swapping_a_file_for_a_symlink_to_outside_never_reaches_outside(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir(), outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    (outside / "target.txt").write_text("untouched\n")
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    victim = work / "victim.txt"
    victim.write_text("inside\n")
    rounds, per_round = 8, 18
    calls = (  # read, write and search in parallel; a search looks for the outside file's text by name
        lambda r, i: ToolCall("read_file", {"path": "victim.txt"}, id=f"c{r}-{i}"),
        lambda r, i: ToolCall("write_file", {"path": "victim.txt", "content": f"written {r}-{i}\n"}, id=f"c{r}-{i}"),
        lambda r, i: ToolCall("search_files", {"pattern": "OUTSIDE-SECRET|inside"} if i % 2 else
                              {"pattern": "OUTSIDE", "path": "victim.txt"}, id=f"c{r}-{i}"),
    )  # fmt: skip
    script = [Reply(tool_calls=[calls[i % 3](r, i) for i in range(per_round)]) for r in range(rounds)]
    args = [str(victim), str(outside / "secret.txt"), str(outside / "target.txt")]
    answers = await tool_answers_while_swapping(tmp_path, work, SWAPPER, args, script)
    assert len(answers) == rounds * per_round
    assert not any("OUTSIDE-SECRET" in answer for answer in answers)
    # Whether a search met the file or the link depends on the scheduler (on a loaded machine, maybe always
    # the link); either way each answer is about the victim, read inside or refused, never the outside.
    assert any("victim.txt" in answer for answer in answers)
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before  # nothing changed or added outside
    assert not [p for p in work.iterdir() if p.name.startswith(".crow-")]  # no temporary file left behind


DIR_SWAPPER = textwrap.dedent(
    """
    import os, sys, time
    folder, outside, stop = sys.argv[1:4]
    swaps = 0
    while not os.path.exists(stop):
        try:
            os.rename(folder, folder + ".real")
            os.symlink(outside, folder)           # the folder now leads outside
            time.sleep(0.0005)
            os.unlink(folder)
            os.rename(folder + ".real", folder)   # a real folder again
            time.sleep(0.0005)
        except OSError:
            pass
        swaps += 1
    print(swaps)
    """
)


@pytest.mark.anyio
async def test_swapping_a_folder_for_a_symlink_to_outside_never_leads_a_search_out(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "folder").mkdir(parents=True), outside.mkdir()
    (outside / "note.txt").write_text("OUTSIDE-SECRET\n")
    for index in range(20):  # files before and after the one named like the outside one
        (work / "folder" / f"a{index:02}.txt").write_text("inside\n")
    (work / "folder" / "note.txt").write_text("inside\n")
    rounds, per_round = 6, 8
    search = {"pattern": "OUTSIDE-SECRET|inside", "max_results": 500}
    script = [
        Reply(tool_calls=[ToolCall("search_files", search, id=f"s{r}-{i}") for i in range(per_round)])
        for r in range(rounds)
    ]
    answers = await tool_answers_while_swapping(
        tmp_path, work, DIR_SWAPPER, [str(work / "folder"), str(outside)], script
    )
    assert len(answers) == rounds * per_round
    assert not any("OUTSIDE-SECRET" in answer for answer in answers)
    assert any("note.txt" in answer or "folder" in answer for answer in answers)  # read inside or refused


@pytest.mark.anyio
async def test_special_files_are_never_read_or_written(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    os.mkfifo(work / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(work / "sock"))
    (work / "environ").symlink_to("/proc/self/environ")
    calls = [
        ToolCall("read_file", {"path": "fifo"}, id="fifo"),  # a blocking open would hang the call forever
        ToolCall("write_file", {"path": "fifo", "content": "x"}, id="fifo_write"),
        ToolCall("read_file", {"path": "sock"}, id="sock"),
        ToolCall("search_files", {"pattern": "x", "path": "fifo"}, id="fifo_search"),  # ripgrep would block on it
        ToolCall("read_file", {"path": "environ"}, id="environ_link"),
        ToolCall("read_file", {"path": "/proc/self/environ"}, id="proc"),
        ToolCall("read_file", {"path": "/dev/zero"}, id="dev"),
        ToolCall("write_file", {"path": "/dev/null", "content": "x"}, id="dev_write"),
        ToolCall("read_file", {"path": "."}, id="dir"),
    ]
    try:
        client, model = await drive(RecordingClient(), tmp_path, work, calls, additional=["/proc", "/dev"])
    finally:
        server.close()
    got = results(model)
    assert "is a FIFO" in got["fifo"] and "is a FIFO" in got["fifo_write"] and "is a FIFO" in got["fifo_search"]
    assert "is a socket" in got["sock"]
    for cid in ("environ_link", "proc", "dev", "dev_write"):
        assert "special file system" in got[cid], (cid, got[cid])
    assert "is a directory" in got["dir"]
    assert all(final(client, cid).status == "failed" for cid in got)
    assert (work / "fifo").is_fifo()


@pytest.mark.anyio
async def test_symlinks_inside_the_roots_are_followed_by_walking_them_again(tmp_path):
    work = tmp_path / "work"
    (work / "real").mkdir(parents=True)
    (work / "real" / "file.txt").write_text("one\n")
    (work / "alias.txt").symlink_to("real/file.txt")
    (work / "dirlink").symlink_to(work / "real")
    calls = [
        ToolCall("read_file", {"path": "alias.txt"}, id="read"),
        ToolCall("edit_file", {"path": "dirlink/file.txt", "old_string": "one", "new_string": "two"}, id="edit"),
        ToolCall("write_file", {"path": "dirlink/new/deep.txt", "content": "deep\n"}, id="new"),
    ]
    client, model = await drive(RecordingClient(), tmp_path, work, calls)
    got = results(model)
    assert got["read"] == "one\n"
    assert (work / "real" / "file.txt").read_text() == "two\n"
    assert (work / "alias.txt").is_symlink()  # the link was written through, not replaced
    assert (work / "real" / "new" / "deep.txt").read_text() == "deep\n"
    assert final(client, "edit").content[0].path == str(work / "real" / "file.txt")  # the diff names the real file


@pytest.mark.anyio
async def test_the_client_gets_the_real_path_and_no_read_for_a_new_file(tmp_path):
    work = tmp_path / "work"
    (work / "real").mkdir(parents=True)
    (work / "real" / "file.txt").write_text("disk\n")
    (work / "alias.txt").symlink_to("real/file.txt")
    real = str(work / "real" / "file.txt")
    client = EditorClient({real: "buffer\n"})
    calls = [
        ToolCall("read_file", {"path": "alias.txt"}, id="read"),
        ToolCall("write_file", {"path": "brand/new.txt", "content": "fresh\n"}, id="new"),
        ToolCall("edit_file", {"path": "alias.txt", "old_string": "buffer", "new_string": "edited"}, id="edit"),
    ]
    _, model = await drive(client, tmp_path, work, calls, capabilities=EDITOR_CAPS)
    got = results(model)
    assert got["read"] == "buffer\n"
    reads = [call["path"] for call in client.called("read_text_file")]
    assert reads and set(reads) == {real}  # the resolved path, and never a read of the new file
    writes = {call["path"]: call["content"] for call in client.called("write_text_file")}
    assert writes == {str(work / "brand" / "new.txt"): "fresh\n", real: "edited\n"}
    assert final(client, "new").status == "completed"
