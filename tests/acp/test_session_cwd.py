"""session/new, load, resume and fork refuse a cwd that is missing or not a directory (-32602, the path named)."""

from __future__ import annotations

import anyio
import pytest
from acp import RequestError
from support.helpers import RecordingClient, crow_env
from support.hosted import hosted_crow

from crow_acp.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_a_cwd_that_is_missing_or_a_file_is_refused_naming_it(crow_home, tmp_path):
    missing, a_file = tmp_path / "gone", tmp_path / "notes.txt"
    a_file.write_text("not a directory")
    async with ScriptedModel([]) as model:
        async with hosted_crow(RecordingClient(), crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                for cwd, reason in ((str(missing), "does not exist"), (str(a_file), "is not a directory")):
                    for request in (
                        conn.new_session(cwd=cwd, mcp_servers=[]),
                        conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[]),
                        conn.resume_session(cwd=cwd, session_id=sid, mcp_servers=[]),
                        conn.fork_session(cwd=cwd, session_id=sid, mcp_servers=[]),
                    ):
                        with pytest.raises(RequestError) as refused:
                            await request
                        assert refused.value.code == -32602
                        assert refused.value.data == {"cwd": cwd, "reason": reason}
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])  # where it exists, it loads
