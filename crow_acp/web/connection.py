"""One ACP connection per HTTP or WebSocket client, each with its own agent over the shared store.

The SDK's server (agent-client-protocol 0.12) leaves gaps that crow closes here, not in clients:
- a session opened by `session/load` or `resume` gets no event stream: the response carries no
  sessionId, so the server never registers the session, and the next `session/prompt` is a 404.
  Crow adds the sessionId to those responses, which registers the stream as `session/new` does.
  The client opens that stream as soon as it sees the session's first replayed update, before the
  response: such a GET waits for the registration instead of getting a 404 (after which the client
  would never open it again).
- unstable methods are not enabled, so `session/close` and `resume` (which crow advertises) answer
  "method not found", and `session/delete` is not routed at all. Crow builds the agent connection
  itself (crow_acp/acp/rpc/routes.py), with them enabled and routed.
- every message pays for a queue, a pump task, two tasks per push and its own write; a replay
  travels as batches instead (outbound.py).
- over HTTP each SSE stream is its own TCP connection, so a session's messages on its session stream
  can overtake what is still in flight on the connection stream: the commands sent after a load's
  response arrived in the middle of its replay. Crow sends everything of a connection on its
  connection stream, in the order the agent sent it, as over WebSocket; a session stream the
  client opens stays open and quiet (keepalives). The SDK's client reads both streams alike.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, cast

from acp._sse import serialize_sse_event, serialize_sse_keepalive
from acp.http.protocol import message_id_key, session_id_from_params
from acp.http.server import SSE_KEEPALIVE_INTERVAL_SECONDS, AcpServer, ConnectionRegistry, ConnectionState, PostResult
from acp.meta import AGENT_METHODS

from ..acp.agent import AcpAgent
from ..acp.rpc.routes import agent_connection
from ..multi import MultiAgent
from ..store import Caller
from .bounds import ClientRules
from .idle import Activity
from .metrics import AgentMetrics, ServeMetrics
from .outbound import Stream, UpdateBatch, transport_pair
from .users import DEFAULT, User

CURRENT_USER: contextvars.ContextVar[User | None] = contextvars.ContextVar("crow_serve_user", default=None)
"""The user of the request being handled (app.py sets it): a connection it creates is theirs."""

REOPENING = frozenset({AGENT_METHODS["session_load"], AGENT_METHODS["session_resume"]})
ASK_PERMISSION = "session/request_permission"
PROMPT = AGENT_METHODS["session_prompt"]


class ServedAgent(Protocol):
    """What a connection serves: an AcpAgent or a MultiAgent (with the ACP handlers the SDK routes to)."""

    async def cancel(self, session_id: str, **kwargs: Any) -> None: ...

    async def shutdown(self) -> None: ...

    def act_for(self, caller: Caller) -> None:
        """Serve this user: their sessions, those shared with them (acp/served.py)."""


class CrowConnection(ConnectionState):
    """ConnectionState with crow's agent built in, unstable methods on, and streams for reopened sessions."""

    def __init__(
        self, connection_id: str, agent: ServedAgent, max_requests: int, rules: ClientRules, user: User
    ) -> None:
        # What ConnectionState.__init__ (SDK 0.12, pinned) does, except that the agent connection
        # enables the unstable methods; the SDK builds it without them and offers no option.
        server_side, pump_side = transport_pair()
        self.connection_id = connection_id
        self.agent = agent
        self._pump_side = pump_side  # type: ignore[assignment]  # it also yields UpdateBatches: _pump reads them
        # AcpAgent implements the methods it serves rather than subclassing acp.Agent (see agent.py).
        self._agent_conn = agent_connection(cast(Any, agent), server_side, listening=True)
        if isinstance(agent, AcpAgent):  # a MultiAgent replays through its conn, update by update
            agent.editor.update_sink = server_side
        self.connection_stream: Stream = Stream()
        self.session_streams: dict[str, Stream] = {}  # type: ignore[assignment]
        self._multiplex: Stream | None = Stream()  # one ordered stream, over HTTP too (see above)
        self._pending_routes: dict[str, str] = {}
        self._response_waiters: dict[str, Any] = {}
        self._pump_task = None
        self._reopening: dict[str, str] = {}
        self.in_flight: set[str] = set()
        """Ids of the client's requests not yet answered (the request limit counts them)."""
        self.prompts: dict[str, str] = {}
        """The session of each session/prompt not yet answered, by request id: the turns running."""
        self.max_requests = max_requests
        self.user = user
        self.rules = rules.for_user(user.bounds)
        self.metrics: tuple[ServeMetrics, AgentMetrics] | None = None
        """The server's metrics and this agent's observer feeding them (attach_metrics)."""
        self._questions: set[str] = set()
        self._registered: dict[str, asyncio.Event] = {}
        self.activity = Activity()

    async def _pump(self) -> None:
        try:
            while (item := await self._pump_side.receive()) is not None:
                if isinstance(item, UpdateBatch):
                    await self.ordered.push(item)
                else:
                    self._count_question(item)
                    await self._route_outbound(item)
        except asyncio.CancelledError:
            return

    def attach_metrics(self, metrics: ServeMetrics) -> None:
        members = self.agent.members if isinstance(self.agent, MultiAgent) else [self.agent]
        agents = [member for member in members if isinstance(member, AcpAgent)]
        observer = metrics.observer(agents[0].models.default if agents else "other")
        for agent in agents:
            agent.add_observer(observer)
        self.metrics = (metrics, observer)

    def _count_question(self, message: Any) -> None:
        if self.metrics is not None and isinstance(message, dict) and message.get("method") == ASK_PERMISSION:
            self.metrics[0].questions.inc()
            if (key := message_id_key(message.get("id"))) is not None:
                self._questions.add(key)

    def _count_answer(self, message: dict[str, Any]) -> None:
        key = message_id_key(message.get("id"))
        if self.metrics is not None and key in self._questions:
            self._questions.discard(key)
            self.metrics[0].answered(message.get("result") if "result" in message else {"outcome": None})

    def ensure_session_stream(self, session_id: str) -> Stream:
        stream = self.session_streams.get(session_id)
        if stream is None:
            stream = self.session_streams[session_id] = Stream()
        return stream

    @property
    def ordered(self) -> Stream:
        """Everything for the client, in order: the socket's, or the connection-scoped SSE stream's."""
        assert self._multiplex is not None
        return self._multiplex

    def outbound(self, session_id: str | None) -> Stream:
        """What one SSE stream (or the socket) sends: all of it, or nothing but keepalives (a session's)."""
        return self.ensure_session_stream(session_id) if session_id is not None else self.ordered

    def reopening(self, session_id: str) -> bool:
        return session_id in self._reopening.values()

    def registration(self, session_id: str) -> asyncio.Event:
        """Set once a reopened session's stream is registered (or its load failed)."""
        return self._registered.setdefault(session_id, asyncio.Event())

    async def deliver_to_agent(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self._count_answer(message)
        if "method" in message:
            message, refused = self.rules.admit(message)
            if refused is not None:
                if "id" in message:  # a refused notification is dropped: it has no one to answer
                    await super()._route_response({"jsonrpc": "2.0", "id": message["id"], "error": refused})
                return
        key = message_id_key(message.get("id")) if "method" in message else None
        if key is not None:
            if len(self.in_flight) >= self.max_requests:
                error = {
                    "code": -32000,
                    "message": f"Too many requests in flight on this connection (limit {self.max_requests})",
                }
                await super()._route_response({"jsonrpc": "2.0", "id": message["id"], "error": error})
                return
            self.in_flight.add(key)
            session_id = session_id_from_params(message.get("params"))
            if message["method"] == PROMPT and session_id is not None:
                self.prompts[key] = session_id
                if self.metrics is not None:
                    self.metrics[1].turn_started(session_id)
            if message["method"] in REOPENING and session_id is not None:
                self._reopening[key] = session_id
        await super().deliver_to_agent(message)

    async def _route_response(self, message: dict[str, Any]) -> None:
        key = message_id_key(message.get("id"))
        session_id = None
        if key is not None:
            self.in_flight.discard(key)
            self.prompts.pop(key, None)
            session_id = self._reopening.pop(key, None)
            if session_id is not None and isinstance(message.get("result"), dict):
                message = {**message, "result": {**message["result"], "sessionId": session_id}}
        await super()._route_response(message)
        if session_id is not None:  # a reopened session: its stream may open now
            self.registration(session_id).set()

    async def close(self) -> None:
        await super().close()
        await self.agent.shutdown()  # its sessions' MCP servers stop, their leases go back


class CrowRegistry(ConnectionRegistry):
    def __init__(
        self,
        make_agent: Callable[[], ServedAgent],
        max_connections: int,
        max_requests: int,
        rules: ClientRules,
        metrics: ServeMetrics | None = None,
    ) -> None:
        super().__init__()
        self.metrics = metrics
        self.make_agent = make_agent
        self.max_connections = max_connections
        self.max_requests = max_requests
        self.rules = rules

    @property
    def connections(self) -> list[CrowConnection]:
        return list(self._connections.values())  # type: ignore[arg-type]

    def full(self) -> bool:
        return len(self._connections) >= self.max_connections

    def create(self, agent_factory: Any = None) -> ConnectionState:
        user = CURRENT_USER.get() or User(DEFAULT, None, self.rules.bounds, admin=True)  # embedded: no auth
        agent = self.make_agent()
        agent.act_for(Caller(user.name, user.admin))  # the connection's sessions are its user's
        state = CrowConnection(_new_id(), agent, self.max_requests, self.rules, user)
        if self.metrics is not None:
            state.attach_metrics(self.metrics)
        return self._add(state)

    def create_multiplex(self, agent_factory: Any = None) -> ConnectionState:
        return self.create()  # every connection is multiplexed (see the module's docstring)

    def _add(self, state: CrowConnection) -> CrowConnection:
        state.start()
        self._connections[state.connection_id] = state
        return state


class CrowServer(AcpServer):
    """The SDK's server core with crow's registry: an agent per connection, limits on connections and calls."""

    def __init__(
        self,
        make_agent: Callable[[], ServedAgent],
        *,
        max_connections: int,
        max_requests: int,
        rules: ClientRules,
        metrics: ServeMetrics | None = None,
    ) -> None:
        super().__init__(lambda conn: cast(Any, make_agent()))
        self._registry = CrowRegistry(make_agent, max_connections, max_requests, rules, metrics)

    @property
    def crow_registry(self) -> CrowRegistry:
        return self._registry  # type: ignore[return-value]

    def validate_stream(self, *, connection_id: str | None, session_id: str | None) -> PostResult | None:
        state = self._registry.get(connection_id) if connection_id else None
        if isinstance(state, CrowConnection) and session_id is not None and state.reopening(session_id):
            return None  # being loaded: open_stream waits for it
        return super().validate_stream(connection_id=connection_id, session_id=session_id)

    async def open_stream(self, *, connection_id: str, session_id: str | None) -> AsyncIterator[bytes]:
        state = self._registry.get(connection_id)
        if isinstance(state, CrowConnection) and session_id is not None and not state.has_session(session_id):
            await state.registration(session_id).wait()
            if not state.has_session(session_id):
                return  # the load failed: no stream
        if isinstance(state, CrowConnection):
            async for chunk in state.outbound(session_id).chunks(SSE_KEEPALIVE_INTERVAL_SECONDS):
                yield b"".join(_sse(item) for item in chunk) if chunk else serialize_sse_keepalive()

    async def handle_post(
        self, message: Any, *, content_type: str | None, connection_id: str | None, session_id: str | None
    ) -> Any:
        if (
            isinstance(message, dict)
            and message.get("method") == AGENT_METHODS["initialize"]
            and self.crow_registry.full()
        ):
            return PostResult(503, {"error": "Too many connections"}, {"Retry-After": "5"})
        return await super().handle_post(
            message, content_type=content_type, connection_id=connection_id, session_id=session_id
        )


def _sse(item: dict[str, Any] | UpdateBatch) -> bytes:
    return item.sse() if isinstance(item, UpdateBatch) else serialize_sse_event(item)


def _new_id() -> str:
    import uuid

    return uuid.uuid4().hex
