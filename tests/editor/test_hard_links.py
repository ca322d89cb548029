"""Hard links (docs/default-agent.md): a file inside the roots that is a hard link to a file outside is read
like any file, by read_file and by a prompt link alike, but never written or edited, locally or through
the editor. And crow's own write (a new file renamed over the name) never changes an outside inode,
even when a regular file is swapped for a hard link to outside between crow's check and its write."""

from __future__ import annotations

import os
import textwrap

import pytest
from acp.schema import ResourceContentBlock
from support.editor_support import EDITOR_CAPS, EditorClient, asked, results
from support.helpers import crow_env, text
from support.hosted import hosted_crow
from support.swap_support import tool_answers_while_swapping

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("capabilities", [None, EDITOR_CAPS], ids=["local", "client"])
async def test_a_hard_link_to_outside_is_read_but_never_written(tmp_path, capabilities):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir(), outside.mkdir()
    (outside / "shared.txt").write_text("OUTSIDE TEXT\n")
    os.link(outside / "shared.txt", work / "linked.txt")
    calls = [
        ToolCall("read_file", {"path": "linked.txt"}, id="read"),
        ToolCall("write_file", {"path": "linked.txt", "content": "replaced\n"}, id="write"),
        ToolCall("edit_file", {"path": "linked.txt", "old_string": "OUTSIDE", "new_string": "CHANGED"}, id="edit"),
    ]
    client = EditorClient({str(work / "linked.txt"): "OUTSIDE TEXT\n"})
    link = ResourceContentBlock(type="resource_link", name="linked.txt", uri=(work / "linked.txt").as_uri())
    with ScriptedModel([Reply(tool_calls=[call]) for call in calls], default=Reply(text="done")) as model:
        async with hosted_crow(
            client, crow_env(tmp_path / "home", model.base_url), cwd=str(work), capabilities=capabilities
        ) as (conn, _):
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text("go"), link])
            assert response.stop_reason == "end_turn"
    got = results(model)
    assert got["read"].startswith("OUTSIDE TEXT")
    assert "OUTSIDE TEXT" in model.requests[0]["messages"][-1]["content"]  # the prompt link: read, as read_file reads
    for refused in ("write", "edit"):
        assert "has 2 hard links; crow does not write a hard-linked file" in got[refused]
    assert asked(client) == []  # refused before anyone is asked to allow it
    assert client.called("write_text_file") == []
    assert (outside / "shared.txt").read_text() == "OUTSIDE TEXT\n"
    assert os.stat(work / "linked.txt").st_ino == os.stat(outside / "shared.txt").st_ino  # the link is as it was


SWAPPER = textwrap.dedent(
    """
    import os, sys, time
    victim, outside, stop = sys.argv[1:4]
    swaps = 0
    while not os.path.exists(stop):
        try:
            os.link(outside, victim + ".lnk")
            os.replace(victim + ".lnk", victim)      # now a hard link to outside
            time.sleep(0.001)
            with open(victim + ".reg", "w") as f:
                f.write("inside\\n")
            os.replace(victim + ".reg", victim)      # a file of its own again
            time.sleep(0.003)                        # long enough for some writes to pass the check
        except OSError:
            pass
        swaps += 1
    print(swaps)
    """
)


async def test_swapping_in_a_hard_link_to_outside_never_changes_outside(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir(), outside.mkdir()
    (outside / "target.txt").write_text("untouched\n")
    victim = work / "victim.txt"
    victim.write_text("inside\n")
    rounds, per_round = 6, 12
    writes = [[ToolCall("write_file", {"path": "victim.txt", "content": f"written {r}-{i}\n"}, id=f"w{r}-{i}")
               for i in range(per_round)] for r in range(rounds)]  # fmt: skip
    script = [Reply(tool_calls=calls) for calls in writes]
    answers = await tool_answers_while_swapping(
        tmp_path, work, SWAPPER, [str(victim), str(outside / "target.txt")], script
    )
    assert len(answers) == rounds * per_round
    # Which writes meet a hard link depends on the scheduler; each gets one of the two answers, never a third.
    assert all(answer.startswith("Wrote victim.txt") or "hard links" in answer for answer in answers), answers
    assert (outside / "target.txt").read_text() == "untouched\n"  # and none of them reached the outside inode
    assert not [p for p in work.iterdir() if p.name.startswith(".crow-")]
