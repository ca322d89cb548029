"""`crow check`: the resolved configuration, and whether each part of it works.

It starts what a session would start (the model endpoint is asked for its model list, each MCP
server is started and listed, skills are loaded) and exits 1 when anything is broken. MCP servers'
stderr goes to crow.log, as under `crow run`.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crow.check_model import endpoint, model_section
from crow.check_report import Report
from crow.exits import FAILED, OK
from crow.startup import store_location, store_problem, store_state

LEASES_SHOWN = 20


@dataclass
class Started:
    """What one MCP server's start showed, kept after the server is closed again."""

    command: str | None
    ready: bool
    error: str | None
    tools: list[str]


def check_command(agent: str | None, model: str | None, cwd: str) -> int:
    from crow.startup import version
    from crow_acp.config import crow_home, load_config
    from crow_acp.errors import ConfigError

    report = Report()
    report.line(f"crow {version()}")
    home = crow_home()
    try:
        config = load_config(model=model)
    except ConfigError as exc:
        _paths(report, home, None, cwd)
        report.section("config")
        for line in str(exc).splitlines():
            report.bad(line)
        return _verdict(report)
    from crow.logfile import log_to_file
    from crow_acp.util.secrets import protect

    protect(config)  # every profile's key variable, for the report and the log
    log_to_file(config.log_dir)
    _paths(report, home, config, cwd)
    report.section("config")
    report.ok(f"{config.config_path} is valid" if config.config_path.exists() else "no config.toml: defaults")
    from crow.startup import env_warnings

    for warning in env_warnings() + config.warnings():
        report.warn(warning)
    if agent:
        report.warn(f"--agent {agent}: its own models and servers are not checked, only the configuration's")
    _store(report, config)
    tool_names = asyncio.run(_probe(report, config, cwd))
    from crow.check_agents import agents_section

    agents_section(report, config)
    _skills(report, home, cwd)
    _permissions(report, config, tool_names)
    _sandbox(report, config)
    return _verdict(report)


def _verdict(report: Report) -> int:
    report.line(f"\n{'nothing broken' if not report.broken else f'{report.broken} broken'}")
    return OK if not report.broken else FAILED


def _paths(report: Report, home: Path, config: Any, cwd: str) -> None:
    from crow_skills.discover import search_dirs

    report.section("paths")
    report.item("home", str(home))
    report.item("config", str(home / "config.toml") + ("" if (home / "config.toml").exists() else " (absent)"))
    report.item("database", store_location(config) if config is not None else str(home / "sessions.db"))
    report.item("logs", str(home / "logs" / "crow.log"))
    for scope in search_dirs(Path(cwd), home=home):
        report.item("skills", f"{scope.path} ({scope.scope}{'' if scope.path.is_dir() else ', absent'})")
    template = config.prompt.system_path if config is not None else None
    own = home / "prompts" / "system.md"
    report.item("prompt", template or (str(own) if own.exists() else "the default template"))


def _store(report: Report, config: Any) -> None:
    report.section("session store")
    problem = asyncio.run(store_problem(config))
    if problem is not None:
        report.bad(f"{store_location(config)} does not answer: {problem}")
        return
    report.ok(f"{store_location(config)} answers")
    state = asyncio.run(store_state(config))
    if isinstance(state, str):
        report.bad(f"{store_location(config)}: {state}")
        return
    report.item("schema", f"version {state.schema_version}")
    report.item("leases", f"{len(state.leases)} live" if state.leases else "none live")
    ttl = config.store.lease_ttl
    for lease in state.leases[:LEASES_SHOWN]:
        renewed = max(ttl - lease.expires_in, 0)  # measured with this config's lease_ttl, which the holder shares
        report.item(
            "",
            f"{lease.session_id}: pid {lease.pid} on {lease.host}, "
            f"renewed {renewed:.0f} s ago, expires in {lease.expires_in:.0f} s",
        )
    if len(state.leases) > LEASES_SHOWN:
        report.item("", f"… and {len(state.leases) - LEASES_SHOWN} more")


async def _probe(report: Report, config: Any, cwd: str) -> list[str]:
    listed = asyncio.create_task(endpoint(config))
    with _stderr_to(config.log_dir / "crow.log"):
        servers = await _servers(config, cwd)
    model_section(report, config, await listed)
    report.section("mcp servers")
    names = _builtin_tools(cwd)
    if not config.mcp_servers:
        report.item("none", "configured")
    for name, server in config.mcp_servers.items():
        if not server.enabled:
            report.item(name, "disabled")
            continue
        state = servers.get(name)
        where = server.url or " ".join([state.command if state else server.command or "", *server.args])
        if state is None or not state.ready:
            report.bad(f"{name}: {state.error if state else 'not started'} ({where})")
            continue
        tools = state.tools
        names += tools
        report.ok(f"{name}: {len(tools)} tools ({where}): {', '.join(tools) or 'none'}")
    return names


async def _servers(config: Any, cwd: str) -> dict[str, Any]:
    from crow_acp.editor.sandbox import server_prefix
    from crow_acp.mcp.host import McpHost, server_specs

    host = McpHost(cwd=cwd, connect_timeout=config.timeouts.mcp_connect, call_timeout=config.timeouts.mcp_call)
    try:
        confine = functools.partial(server_prefix, config.sandbox, cwd=cwd)
        await host.connect(server_specs([], config.mcp_servers, confine))
        return {
            s.spec.name: Started(s.spec.command, s.status == "ready", s.error, [t.name for t in s.tools])
            for s in host.servers
        }
    finally:
        await host.close()


def _builtin_tools(cwd: str) -> list[str]:
    from crow_acp.editor import EditorTools, Workspace

    return [tool.name for tool in EditorTools().tools(Workspace.of(cwd, []))] + ["load_skill"]


def _skills(report: Report, home: Path, cwd: str) -> None:
    from crow_skills.discover import discover, search_dirs

    found = discover(search_dirs(Path(cwd), home=home))
    report.section("skills")
    report.item("found", f"{len(found.skills)}" + (f": {', '.join(found.skills)}" if found.skills else ""))
    for warning in found.warnings:
        report.warn(warning)
    for loser, winner in found.shadowed:
        report.warn(f"{loser.path} is shadowed by {winner.path}")


def _permissions(report: Report, config: Any, tool_names: list[str]) -> None:
    report.section("permissions")
    report.item("default", config.permissions.default)
    for pattern, policy in config.permissions.tools.items():
        matched = [name for name in tool_names if fnmatch.fnmatchcase(name, pattern)]
        if matched:
            report.item(policy, f"{pattern}: {', '.join(matched)}")
        else:
            report.warn(f"{pattern} = {policy!r} matches no tool (names are listed above)")


def _sandbox(report: Report, config: Any) -> None:
    from crow_acp.editor.sandbox import unavailable

    report.section("sandbox")
    if not config.sandbox.enabled:
        report.warn("disabled ([sandbox] enabled = false): every command asks, and runs outside a sandbox")
    elif why := unavailable():
        report.warn(f"commands cannot be sandboxed: {why}")
        report.warn("until then auto and plan modes ask for every command, as ask mode does")
    else:
        report.ok(f"bubblewrap works: commands run sandboxed, network {'on' if config.sandbox.network else 'off'}")
        _confinement(report)


def _confinement(report: Report) -> None:
    """Who crow runs as and what the sandbox does about it; whether unix sockets stay out of reach."""
    from crow_acp.editor import seccomp

    if os.geteuid() == 0:
        report.ok(
            "crow runs as root: sandboxed commands run in a user namespace of their own with every capability "
            "dropped (no mount, umount or unshare inside)"
        )
    else:
        report.ok("crow runs as an ordinary user: sandboxed commands run in a user namespace, every capability dropped")
    if why := seccomp.unavailable():
        report.warn(why)
    else:
        report.ok(
            "no unix socket inside the sandbox: /run, /tmp and $XDG_RUNTIME_DIR are private, socket(AF_UNIX) refused"
        )


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point fd 2 at the log while MCP servers start: their stderr is not part of the report."""
    sys.stderr.flush()
    try:
        from crow_acp.config.private import private_dir

        private_dir(path.parent.parent)  # $CROW_HOME and its logs/, private as crow.log is
        private_dir(path.parent)
        target = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    saved = os.dup(2)
    os.dup2(target, 2)
    os.close(target)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
