"""A graph (MultiAgent) queues prompts as a single agent does, but serves no `_session/steering`: its
initialize answer, the entry member's, must not advertise what the graph would refuse (issue 31)."""

from __future__ import annotations

from typing import Any

import pytest
from acp import RequestError

from crow_acp import AcpAgent, MultiAgent
from crow_acp.config import Config

pytestmark = pytest.mark.anyio


async def test_a_graph_advertises_queueing_but_not_steering(tmp_path: Any):
    config = Config(home=tmp_path / "home")
    single = AcpAgent(config, name="a")
    multi = MultiAgent(entry_agent=AcpAgent(config, name="a"), members=[AcpAgent(config, name="b")])
    alone = (await single.initialize(protocol_version=1)).model_dump(mode="json", by_alias=True, exclude_none=True)
    graph = (await multi.initialize(protocol_version=1)).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert alone["_meta"]["steering"] == {"supported": True}
    assert "steering" not in graph["_meta"] and graph["_meta"]["crow"] == alone["_meta"]["crow"]
    assert graph["agentCapabilities"]["_meta"] == {"claudeCode": {"promptQueueing": True}}
    with pytest.raises(RequestError) as refused:  # the SDK sends it as the method-not-found answer
        await multi.ext_method("session/steering", {"sessionId": "x", "prompt": []})
    assert refused.value.code == -32601
