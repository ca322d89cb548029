"""The agents `crow serve` builds: one per connection, from the default preset or `--agent`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def agent_factory(spec: str | None, config: Any) -> Callable[[], Any]:
    """Builds a new agent for each connection (an agent holds its connection): the default one, or what
    `--agent` names, as `crow acp --agent` takes it. A zero-argument factory is called once per connection;
    an agent or MultiAgent instance comes from running its module again, so no two connections share one."""
    if spec is None:
        from crow.presets import default_agent

        return lambda: default_agent(config)
    from crow.agent_loader import load_agent
    from crow_acp.acp.agent import AcpAgent
    from crow_acp.multi import MultiAgent

    load_agent(spec, config)  # a mistake in the spec or the user's module stops crow here, in one line
    target, _, attr = spec.rpartition(":")
    value = getattr(_module(target, fresh=False), attr)
    if not isinstance(value, (AcpAgent, MultiAgent)):
        return lambda: _checked(value(), spec)
    return lambda: _checked(getattr(_module(target, fresh=True), attr, None), spec)


def _module(target: str, *, fresh: bool) -> Any:
    """The user's module as `crow acp` imports it, or run anew (its folder is on sys.path already)."""
    import importlib
    import importlib.util
    from pathlib import Path

    from crow.agent_loader import _import

    if not fresh:
        return _import(target)
    found = (
        importlib.util.spec_from_file_location(Path(target).stem, Path(target).expanduser().resolve())
        if target.endswith(".py")
        else importlib.util.find_spec(target)
    )
    if found is None or found.loader is None:
        raise RuntimeError(f"--agent: cannot load {target} again")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def _checked(agent: Any, spec: str) -> Any:
    from crow_acp.acp.agent import AcpAgent
    from crow_acp.multi import MultiAgent

    if not isinstance(agent, (AcpAgent, MultiAgent)):
        raise TypeError(f"--agent {spec} built a {type(agent).__name__}, not an AcpAgent or MultiAgent")
    return agent


def with_store(agent: Any, store: Any) -> Any:
    """Every agent of a connection keeps its sessions in the server's one store (a graph's members too)."""
    from crow_acp.acp.agent import AcpAgent

    for member in [agent] if isinstance(agent, AcpAgent) else agent.members:
        member.use_store(store)
    return agent
