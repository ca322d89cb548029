"""Running the app under uvicorn, and stopping it gracefully.

uvicorn's own SIGTERM handling closes WebSockets at once and re-raises the signal, so a turn in
progress would lose its answer. Crow handles SIGTERM and SIGINT itself:
1. stop accepting connections (health turns 503, new requests get 503);
2. let running turns finish, up to the grace period;
3. cancel the rest: every open prompt is answered "cancelled", its calls recorded as cut by the stop
   (a later load marks the turn, and /continue resumes it: core/cut_turn.py);
4. close every connection: MCP servers stop, writes land, leases go back; then exit 0.
A second signal skips the rest of the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..acp.sessions.leases import held
from ..errors import ConfigError
from ..store import SessionStore
from ..store.sql import SqlStore
from .app import CrowApp, Limits
from .auth import Auth
from .bounds import ClientRules
from .connection import CrowRegistry, CrowServer, ServedAgent
from .guard import Gate
from .listen import listen
from .metrics import ServeMetrics
from .sockets import guarded_protocol, socket_budget
from .users import Users

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    """None only with --no-token, on loopback (check_token)."""
    grace: float = 30.0
    """Seconds running turns get to finish after SIGTERM before they are cancelled."""
    limits: Limits = field(default_factory=Limits)
    gate: Gate = field(default_factory=lambda: Gate.build("127.0.0.1"))
    rules: ClientRules = field(default_factory=ClientRules)
    """What clients may name: commands, directories (--root), modes (--max-mode)."""
    announce: Callable[[int], None] | None = None
    """Called with the port once it is bound (crow serve then writes its token file and prints the URLs)."""
    metrics_token: str | None = None
    """A token that may read /metrics (besides an admin's), for a Prometheus scraper."""
    users: Users | None = None
    """--users: who may connect, each with their token, roots and cap; None: one user, `default`, with
    `token` and the server's rules."""


class TokenRequired(ConfigError):
    """--no-token, or a token too short to withstand guessing, beyond loopback."""


MIN_TOKEN = 32
"""Characters a token needs beyond loopback (crow's generated ones have 43)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_token(options: ServeOptions) -> None:
    if options.token is None and options.users is None and not is_loopback(options.host):
        raise TokenRequired(
            f"crow serve listens on {options.host}, beyond this machine: --no-token is for loopback only; "
            "set CROW_SERVE_TOKEN or --token-file, or let crow generate one"
        )
    if options.token is not None and len(options.token) < MIN_TOKEN and not is_loopback(options.host):
        raise TokenRequired(
            f"crow serve listens on {options.host}, beyond this machine: the token has {len(options.token)} "
            f"characters, and it needs at least {MIN_TOKEN}; let crow generate one, or make one with "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )


def build_app(make_agent: Callable[[], ServedAgent], store: SessionStore, options: ServeOptions) -> CrowApp:
    limits = options.limits
    metrics = ServeMetrics(
        lambda: len(server.crow_registry.connections), lambda: _sessions(server), lambda: held(store)
    )
    if isinstance(store, SqlStore):  # a store of crow's own: its workers report each operation's latency
        store.workers.time_with(metrics.store_timing)
    server: CrowServer = CrowServer(
        make_agent,
        max_connections=limits.max_connections,
        max_requests=limits.max_requests,
        rules=options.rules,
        metrics=metrics,
    )
    users = options.users or Users.single(options.token, options.rules.bounds)
    auth = Auth(users)
    return CrowApp(server, store, auth=auth, limits=limits, gate=options.gate, metrics_token=options.metrics_token)


async def serve(make_agent: Callable[[], ServedAgent], store: SessionStore, options: ServeOptions) -> None:
    """Serve until SIGTERM/SIGINT, then drain (see the module docstring)."""
    import uvicorn

    check_token(options)
    from ..mcp.address_guard import guard_client_urls

    guard_client_urls(options.rules.urls)  # every client-named HTTP/SSE MCP server: its addresses checked
    await store.ping()  # a bad URL or a database that is down fails here, before any client connects
    app = build_app(make_agent, store, options)
    max_sockets, backlog = socket_budget()
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        lifespan="on",
        log_config=None,
        access_log=False,
        ws_max_size=options.limits.max_body,
        timeout_graceful_shutdown=5,
        backlog=backlog,
        http=guarded_protocol(options.limits.header_timeout, max_sockets),
    )
    sockets = listen(options.host, options.port)  # a taken port is one line (listen.py), not uvicorn's
    port = sockets[0].getsockname()[1]
    log.info("listening on %s port %d", options.host, port)
    if options.announce is not None:
        options.announce(port)
    await GracefulServer(config, app, store, options.grace).serve(sockets)


def client_urls(host: str, port: int) -> str:
    """The endpoint as clients name it: Streamable HTTP and WebSocket."""
    name = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{name}:{port}/acp (Streamable HTTP) and ws://{name}:{port}/acp (WebSocket)"


class GracefulServer:
    """uvicorn.Server with crow's signal handling (composition keeps uvicorn's internals at arm's length)."""

    def __init__(self, config: Any, app: CrowApp, store: SessionStore, grace: float) -> None:
        import uvicorn

        self.app, self.store, self.grace = app, store, grace
        self._hurry = asyncio.Event()
        self._draining: asyncio.Task[None] | None = None
        self._reloads: set[asyncio.Task[None]] = set()
        server = self.uvicorn = uvicorn.Server(config)
        server.capture_signals = self._capture_signals  # type: ignore[method-assign]

    async def serve(self, sockets: list[socket.socket]) -> None:
        await self.uvicorn.serve(sockets=sockets)

    @contextlib.contextmanager
    def _capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal)
        loop.add_signal_handler(signal.SIGHUP, self._on_hangup)
        try:
            yield
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)

    def _on_hangup(self) -> None:
        """SIGHUP: the users file read again, as after a change (auth.py)."""
        self._reloads.add(
            task := asyncio.ensure_future(self.app.auth.refresh(self.app.server.crow_registry, force=True))
        )
        task.add_done_callback(self._reloads.discard)

    def _on_signal(self) -> None:
        if self._draining is None:
            self._draining = asyncio.ensure_future(self.drain())
        else:
            self._hurry.set()

    async def drain(self) -> None:
        log.info("draining: no new connections; running turns get %.0f s", self.grace)
        self.app.draining = True
        for listener in getattr(self.uvicorn, "servers", []):
            listener.close()
        registry = self.app.server.crow_registry
        await _until(lambda: not _turns_running(registry), self.grace, self._hurry)
        from ..core.cut_turn import crow_stops

        crow_stops()  # what is cancelled now is cut by crow's stop, not the user's: a load marks it, /continue resumes
        for connection in registry.connections:
            for session_id in set(connection.prompts.values()):
                await connection.agent.cancel(session_id=session_id)
        await _until(lambda: not _turns_running(registry), 15.0, asyncio.Event())
        await _until(lambda: not any(c.in_flight for c in registry.connections), 5.0, asyncio.Event())
        await registry.close_all()
        await self.store.close()
        log.info("drained; exiting")
        self.uvicorn.should_exit = True


def _sessions(server: CrowServer) -> int:
    return sum(len(connection.session_streams) for connection in server.crow_registry.connections)


def _turns_running(registry: CrowRegistry) -> bool:
    """A turn runs while its session/prompt is unanswered (a MultiAgent's run spans several members' turns)."""
    return any(c.prompts for c in registry.connections)


async def _until(done: Callable[[], bool], timeout: float, hurry: asyncio.Event) -> None:
    """Polls: the conditions span every connection's sessions and requests, which signal no one event."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done() and loop.time() < deadline and not hurry.is_set():  # noqa: ASYNC110
        await asyncio.sleep(0.05)
