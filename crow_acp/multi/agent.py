"""MultiAgent: a graph of agents served to the editor as one ACP agent.

    MultiAgent(entry_agent=a)                      a, and every agent a's bridges reach
    MultiAgent(entry_agent=a, members=[judge])     plus agents no bridge reaches
    MultiAgent(entry_agent=a, driver=fn)           a pattern: fn steers the graph (crow.patterns)

One editor session is a session on every member (same cwd, same MCP servers); the editor's
session id is the entry agent's. A prompt goes to the entry agent, or to the driver. Everything a
member shows reaches the editor attributed (conn.py), or on the member's own child session for an editor
that opted in to subagents (children.py); hand-offs show as "a → b" tool calls, cancel stops every member
(a cancel of one child, that member), and the stop reason covers the whole run ("cancelled" if any part
was); session/load restores every member and replays the whole graph's history in order.

Shared context (the seeds' blackboard or ProjectState): the keys in `shared_keys` (by default "blackboard", "plan"
and "graph_sessions"; patterns add theirs) are one Blackboard across all members of an editor session
(blackboard.py). `session.set_context(key, ...)` in any member (or any other change of a shared key) is seen by
every other member at once, and is saved with every member. Other keys stay private to the member's session: they
hold per-session bookkeeping (injected skills, compaction counters) that must not leak. The members are driven
through AcpAgent's public methods only (acp/agent.py, acp/sessions/registry.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from acp import RequestError
from acp.schema import (
    DeleteSessionResponse,
    ForkSessionResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
)

from ..acp.agent import AcpAgent
from ..acp.prompt.message import as_dicts, user_text
from ..acp.rpc.capabilities import without_steering
from ..acp.rpc.shapes import ClientFeatures
from ..errors import CrowError
from ..telemetry import gen_ai, spans
from .children import ChildSessions
from .conn import MemberConnection, replay_graph
from .graph import DEFAULT_SHARED, Graph, Node, collect_members, entry_of, stored_members
from .members import delete_members, new_members, open_members, resume_members
from .outlet import Outlet
from .run import CURRENT_RUN, Outcome, Prompt, Run, prompt_text
from .served import ServedGraph

log = logging.getLogger(__name__)

Driver = Callable[[Run, Prompt, "str | None"], Awaitable[Outcome]]
"""`async def driver(run, prompt, source) -> Outcome`: asks members through `run.ask(...)`."""


class MultiAgent(ServedGraph):
    def __init__(
        self,
        entry_agent: Node,
        *,
        members: Iterable[Node] = (),
        driver: Driver | None = None,
        name: str | None = None,
        shared_keys: Iterable[str] = (),
    ) -> None:
        extra = list(members)
        self.entry_agent = entry_agent
        self.entry = entry_of(entry_agent)
        self.members = collect_members([entry_agent, *extra])
        for member in self.members:
            member.keep_sessions_open()  # a graph's sessions leave memory together, on close or shutdown
            member.turns.model_titles = member is self.entry  # no side call to name a session nobody is shown
        self.driver = driver
        self.name = name or self.entry.name
        nested = [key for node in [entry_agent, *extra] if isinstance(node, MultiAgent) for key in node.shared_keys]
        self.shared_keys: frozenset[str] = frozenset({*DEFAULT_SHARED, *shared_keys, *nested})
        self.outlet = Outlet()
        self.features = ClientFeatures()
        self._graphs: dict[str, Graph] = {}

    async def drive(self, run: Run, prompt: Prompt, source: str | None) -> Outcome:
        """Run this graph (or pattern) on `prompt` inside `run`; nested MultiAgents run in the outer run."""
        if self.driver is not None:
            return await self.driver(run, prompt, source)
        return await run.ask(self.entry_agent, prompt, source=source)

    # ACP: connection
    def on_connect(self, conn: Any) -> None:
        self.outlet.conn = conn
        for member in self.members:
            member.on_connect(MemberConnection(self.outlet, member.name))

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_features: ClientFeatures | None = None,
        **kwargs: Any,
    ) -> Any:
        self.features = client_features or ClientFeatures()
        answers = [
            await member.initialize(
                protocol_version=protocol_version,
                client_capabilities=client_capabilities,
                client_features=client_features,
                **kwargs,
            )
            for member in self.members
        ]
        return without_steering(answers[0])

    async def shutdown(self) -> None:
        await asyncio.gather(*(member.shutdown() for member in self.members))

    # ACP: sessions
    async def new_session(
        self,
        cwd: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        system_prompt: Any = None,
        **_: Any,
    ) -> NewSessionResponse:
        """Every member's session, each with the client's system prompt over that member's own."""
        graph = self._open(await new_members(self.members, cwd, mcp_servers, additional_directories, system_prompt))
        self.outlet.release_after_response(graph, announce=True)
        return NewSessionResponse(session_id=graph.editor_sid, config_options=self._options(graph))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, system_prompt: Any = None, **_: Any
    ) -> Any:
        async with self.entry.ownership.as_owner_of(session_id, "read"):
            graph = self._open(await resume_members(self.members, cwd, session_id, mcp_servers, system_prompt))
        self._sync_mode(graph.editor_sid)  # a member created on load starts in the entry's mode too
        await replay_graph(graph, self.outlet.send)
        self.outlet.release_after_response(graph, announce=False)  # the replay announced the children
        return LoadSessionResponse(config_options=self._options(graph))

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, system_prompt: Any = None, **_: Any
    ) -> Any:
        async with self.entry.ownership.as_owner_of(session_id, "read"):
            graph = self._open(await resume_members(self.members, cwd, session_id, mcp_servers, system_prompt))
        self._sync_mode(graph.editor_sid)  # a member created on load starts in the entry's mode too
        self.outlet.release_after_response(graph, announce=True)
        return ResumeSessionResponse(config_options=self._options(graph))

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_: Any) -> Any:
        """Zed's model picker sets the entry agent's model; the other members keep their own. The
        permission mode holds for the whole graph: plan mode must not end at the first hand-off."""
        answer = await self.entry.set_config_option(config_id=config_id, session_id=session_id, value=value)
        self._sync_mode(session_id)
        return answer

    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> Any:
        answer = await self.entry.set_session_mode(mode_id=mode_id, session_id=session_id)
        self._sync_mode(session_id)
        return answer

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        system_prompt: Any = None,
        **_: Any,
    ) -> ForkSessionResponse:
        """A new editor session: every member's session forked (its history so far, the blackboard as
        it stands), one new graph from then on. Each member's copy is its own store transaction, so a
        later session/load replays the copied part member by member, not interleaved as it happened."""

        async def fork(member: AcpAgent, sid: str) -> str:
            answer = await member.fork_session(sid, cwd, additional_directories, mcp_servers, system_prompt)
            return str(answer.session_id)

        async with self.entry.ownership.as_owner_of(session_id, "read") as grant:  # each copy is the owner's
            sids = await open_members(
                self.members, session_id, fork, cwd, mcp_servers, additional_directories, system_prompt
            )
        await self.entry.ownership.forked(sids[self.entry.name], grant)  # the forker may continue the graph
        graph = self._open(sids)
        self._sync_mode(graph.editor_sid)
        self.outlet.release_after_response(graph, announce=True)
        return ForkSessionResponse(session_id=graph.editor_sid, config_options=self._options(graph))

    def _sync_mode(self, session_id: str) -> None:
        if (graph := self._graphs.get(session_id)) is None:
            return
        mode = self.entry.mode_of(graph.entry_sid)
        for name, sid in graph.sessions.items():
            if sid != graph.entry_sid:
                graph.agents[name].set_mode(sid, mode)

    def _options(self, graph: Graph) -> list[Any]:
        return self.entry.config_options(graph.entry_sid)

    async def close_session(self, session_id: str, **_: Any) -> None:
        graph = self._graphs.pop(session_id, None)
        if graph is None:
            return
        for name, sid in graph.sessions.items():
            self.outlet.routes.pop(sid, None)
            await graph.agents[name].close_session(session_id=sid)

    async def delete_session(self, session_id: str, **_: Any) -> DeleteSessionResponse:
        """The graph closed here, then the entry's session deleted (refused, with nothing deleted, if another
        process has it open), then each member's session that the entry's record named."""
        if (grant := await self.entry.ownership.deletable(session_id)) is None:  # as for an unknown id
            return DeleteSessionResponse()
        await stored_members(self.entry, session_id)  # refuses a member's (child) session before closing anything
        await self.close_session(session_id=session_id)
        await delete_members(self.members, session_id, grant)
        return DeleteSessionResponse()

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Stop the whole graph: the run (no further hand-offs, no side calls) and every member's turn.
        On a child session (children.py), only that member's turn: the graph decides what follows."""
        graph = self._graphs.get(session_id)
        if graph is None:
            child = self.outlet.graph_of(session_id)
            if child is not None and child.children and (name := child.name_of(session_id)) != child.entry_name:
                await child.agents[str(name)].cancel(session_id=session_id)
            return
        graph.cancels += 1
        if graph.run is not None:
            graph.run.cancel()
        for name, sid in graph.sessions.items():
            await graph.agents[name].cancel(session_id=sid)

    # ACP: prompt
    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        graph = self._graphs.get(session_id)
        if graph is None:
            raise RequestError.resource_not_found(session_id)
        cancels = graph.cancels  # a cancel from now on is meant for this prompt too (the check below waits)
        async with self.entry.ownership.as_owner_of(session_id, "full"):  # the members' turns are the owner's
            return await self._prompt(prompt, session_id, graph, cancels)

    async def _prompt(self, prompt: list[Any], session_id: str, graph: Graph, cancels: int) -> PromptResponse:
        async with graph.lock:
            if graph.cancels != cancels:  # cancelled while it waited behind the run before it
                return PromptResponse(stop_reason="cancelled")
            if self._is_command(graph, prompt):  # the `/` commands the editor offers are the entry's
                try:
                    return await self.entry.prompt(prompt=prompt, session_id=session_id)
                finally:
                    self._sync_mode(session_id)  # /mode switched the entry
            children = ChildSessions(graph, self.outlet.send) if graph.children else None
            run = graph.run = Run(graph, prompt, lambda update: self.outlet.send(graph.editor_sid, update), children)
            token, named = CURRENT_RUN.set(run), spans.SESSION.set(session_id)  # log lines name the session
            try:  # traced, the members' turns are children of the run's
                with gen_ai.invoke_agent(self.name, session_id, user_text(as_dicts(prompt))) if spans.on else spans.OFF:
                    outcome = await self.drive(run, prompt, None)
            except Exception as exc:  # the one top-level handler of a prompt: the editor must get an answer
                if not isinstance(exc, CrowError):
                    log.exception("multi-agent run failed")
                raise RequestError(
                    -32603, str(exc) if isinstance(exc, CrowError) else f"Internal error: {exc!r}"
                ) from exc
            finally:
                CURRENT_RUN.reset(token)
                spans.SESSION.reset(named)
                graph.run = None
                graph.save()
            await self._title(graph, prompt)
        if run.cancelled or outcome.stop_reason == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        if outcome.error:
            raise RequestError(-32603, outcome.error)
        return PromptResponse(stop_reason=outcome.stop_reason)

    @staticmethod
    def _is_command(graph: Graph, prompt: Prompt) -> bool:
        text = user_text(as_dicts(prompt)) if isinstance(prompt, list) else prompt
        return graph.entry.offers_command(graph.entry_sid, text)

    # Plumbing: sessions
    def _open(self, sids: dict[str, str]) -> Graph:
        graph = Graph.open(self.members, sids, self.shared_keys)
        graph.children = self.features.subagents
        self._graphs[graph.editor_sid] = graph
        for sid in sids.values():
            self.outlet.routes[sid] = graph
        return graph

    def graph_of(self, session_id: str | None) -> Graph | None:
        """The graph an open session id (the editor's or a member's) belongs to."""
        return self.outlet.graph_of(session_id)

    async def _title(self, graph: Graph, prompt: Prompt) -> None:
        """Drivers that never give the entry the user's text still give the session a title, the
        model's too; the entry's session_info_update reaches the editor as the graph's (conn.py)."""
        await graph.entry.title_session(graph.entry_sid, prompt_text(prompt))


__all__ = ["Driver", "MultiAgent"]
