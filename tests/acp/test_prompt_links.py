"""Prompt links obey the session's roots: a linked file is read only inside them, only if it is a
regular file under the size cap; otherwise the model is told the link was not read, and why."""

from __future__ import annotations

import os

import pytest
from acp.schema import EmbeddedResourceContentBlock, ResourceContentBlock, TextResourceContents
from support.helpers import RecordingClient, crow_env, text
from support.hosted import hosted_crow

from crow_acp.acp.prompt.message import MAX_LINKED_FILE
from crow_acp.testing import Reply, ScriptedModel


def link(path, name: str | None = None) -> ResourceContentBlock:
    uri = path if isinstance(path, str) else path.as_uri()
    return ResourceContentBlock(type="resource_link", name=name or os.path.basename(uri), uri=uri)


@pytest.mark.anyio
async def test_links_are_read_only_inside_the_roots(tmp_path):
    work, extra, outside = tmp_path / "work", tmp_path / "extra", tmp_path / "outside"
    for folder in (work, extra, outside):
        folder.mkdir()
    (work / "ok.txt").write_text("INSIDE-CONTENT")
    (extra / "more.txt").write_text("EXTRA-CONTENT")
    (outside / "secret.txt").write_text("OUTSIDE-SECRET")
    (work / "escape.txt").symlink_to(outside / "secret.txt")
    (work / "big.txt").write_text("x" * (MAX_LINKED_FILE + 1))
    os.mkfifo(work / "fifo")
    (work / "environ").symlink_to("/proc/self/environ")
    prompt = [
        text("look"),
        link(work / "ok.txt"),
        link(extra / "more.txt"),
        link(outside / "secret.txt"),
        link(work / "escape.txt"),
        link(work / "big.txt"),
        link(work / "fifo"),
        link(work / "environ"),
        link("file:///proc/self/environ"),
        link(work / "missing.txt"),
        link("https://example.com/page"),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(
                uri=(outside / "buffer.py").as_uri(), text="OUTSIDE-EMBEDDED", mime_type="text/plain"
            ),
        ),
        EmbeddedResourceContentBlock(
            type="resource", resource=TextResourceContents(uri=(work / "buffer.py").as_uri(), text="INSIDE-EMBEDDED")
        ),
    ]
    with ScriptedModel([Reply(text="seen")]) as model:
        async with hosted_crow(RecordingClient(), crow_env(tmp_path / "home", model.base_url), cwd=str(work)) as (
            conn,
            _,
        ):
            session = await conn.new_session(cwd=str(work), mcp_servers=[], additional_directories=[str(extra)])
            assert (await conn.prompt(session_id=session.session_id, prompt=prompt)).stop_reason == "end_turn"
    content = model.requests[0]["messages"][-1]["content"]
    parts = {line.split(" (not read: ")[0]: line for line in content.splitlines() if "(not read:" in line}
    assert "INSIDE-CONTENT" in content and "EXTRA-CONTENT" in content and "INSIDE-EMBEDDED" in content
    assert "OUTSIDE-SECRET" not in content and "OUTSIDE-EMBEDDED" not in content and "x" * 1000 not in content
    assert "PATH=" not in content  # /proc/self/environ was not read by either route

    def reason(name: str, uri: str) -> str:
        return parts[f"[resource link: {name} {uri}"]

    assert "outside the workspace" in reason("secret.txt", (outside / "secret.txt").as_uri())
    assert "symbolic link" in reason("escape.txt", (work / "escape.txt").as_uri())
    assert "larger than" in reason("big.txt", (work / "big.txt").as_uri())
    assert "FIFO" in reason("fifo", (work / "fifo").as_uri())
    assert "outside the workspace" in reason("environ", (work / "environ").as_uri())
    assert "outside the workspace" in reason("environ", "file:///proc/self/environ")
    assert "No such file" in reason("missing.txt", (work / "missing.txt").as_uri())
    assert "only file links" in reason("page", "https://example.com/page")
    assert "outside the workspace" in parts[f"[resource link: {(outside / 'buffer.py').as_uri()}"]
