"""The SDK's agent connection, with the stable methods its router (agent-client-protocol 0.12.1,
schema 1.19) does not route added.

`session/delete` is stable in the spec and DeleteSessionRequest is in the SDK's schema, but
build_agent_router has no route for it: an editor would get "method not found". `initialize` is
routed again with a model that keeps the newer client capabilities (rpc/shapes/): the agent's
`initialize` receives them as `client_features`. session/new, load, resume and fork are routed again
with models that keep `systemPrompt` (the handlers receive it raw as `system_prompt`). Every connection crow
serves (stdio, `crow run`'s in-memory pair, `crow serve`) is built here: unstable methods on (close,
resume, fork), and the missing routes added through the SDK's own `route_request`, which routes a
method only to an agent that has its handler, as for every other method. `$/cancel_request` is
answered by request_cancel.py, which holds the connection's other reach into the SDK's internals.
"""

from __future__ import annotations

from typing import Any

from acp.agent.connection import AgentSideConnection
from acp.meta import AGENT_METHODS
from acp.router import MessageRouter
from acp.schema import DeleteSessionRequest, LogoutRequest
from acp.utils import normalize_result
from pydantic import BaseModel

from .request_cancel import CancellableRequests
from .shapes import (
    NewerForkSessionRequest,
    NewerInitializeRequest,
    NewerLoadSessionRequest,
    NewerNewSessionRequest,
    NewerResumeSessionRequest,
)

MISSING: list[tuple[str, type[BaseModel], str]] = [
    (AGENT_METHODS["session_delete"], DeleteSessionRequest, "delete_session"),
    (AGENT_METHODS["initialize"], NewerInitializeRequest, "initialize"),
    (AGENT_METHODS["session_new"], NewerNewSessionRequest, "new_session"),
    (AGENT_METHODS["session_load"], NewerLoadSessionRequest, "load_session"),
    (AGENT_METHODS["session_resume"], NewerResumeSessionRequest, "resume_session"),
    (AGENT_METHODS["session_fork"], NewerForkSessionRequest, "fork_session"),
    (AGENT_METHODS["logout"], LogoutRequest, "logout"),
]
"""(method, request model, handler name) for each stable method the SDK does not route, or routes
with a model that drops the fields of newer schemas (rpc/shapes/)."""


def agent_connection(agent: Any, transport: Any, *, listening: bool) -> AgentSideConnection:
    """The connection serving `agent` on `transport` (the SDK's Transport seam)."""
    connection = AgentSideConnection(agent, transport, listening=listening, use_unstable_protocol=True)
    router = connection._conn._handler  # the SDK (pinned to 0.12) builds its router inside; this is its only door
    assert isinstance(router, MessageRouter)
    for method, model, handler in MISSING:
        router.route_request(method, model, agent, handler, adapt_result=normalize_result)
    CancellableRequests(connection._conn)  # `$/cancel_request`, which the SDK does not know (request_cancel.py)
    return connection
