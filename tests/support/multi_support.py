"""Shared parts of the multi-agent tests: one scripted model per agent, and `crow acp --agent` on a graph."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION

import crow_acp.model.profiles
from crow.agent_loader import load_agent
from crow_acp.testing import ScriptedModel
from crow_acp.testing.function_model import FunctionModel
from support.helpers import TESTS, crow_env, run_crow

AGENTS = TESTS / "agents" / "multi_agents.py"


def multi_env(home: Path, models: dict[str, ScriptedModel], **extra: str) -> dict[str, str]:
    env = crow_env(home, "http://127.0.0.1:9/v1", **extra)
    del env["OPENAI_BASE_URL"]  # it would override every agent's own model URL
    for name, model in models.items():
        env[f"CROW_TEST_MODEL_{name.upper()}_URL"] = model.base_url
    return env


@asynccontextmanager
async def scripted(**scripts: Any) -> AsyncIterator[dict[str, ScriptedModel]]:
    """name=[entries] or name=responder: one running ScriptedModel per agent."""
    async with AsyncExitStack() as stack:
        models = {}
        for name, script in scripts.items():
            model = ScriptedModel(script) if isinstance(script, list) else ScriptedModel(default=script)
            models[name] = await stack.enter_async_context(model)
        yield models


@asynccontextmanager
async def serve(
    client: Any, factory: str, home: Path, models: dict[str, ScriptedModel], **kwargs: Any
) -> AsyncIterator[Any]:
    env = multi_env(home, models, **kwargs.pop("env", {}))
    async with run_crow(client, env, "--agent", f"{AGENTS}:{factory}", **kwargs) as (conn, _):
        yield conn


def last_user(request: dict) -> str:
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")


def all_text(request: dict) -> str:
    return json.dumps(request["messages"])


def titles(client: Any) -> list[tuple[str, str]]:
    """(title, status) of every tool_call start, in order (hand-offs and reports included)."""
    return [(u.title, u.status) for u in client.of("tool_call")]


def functions(**scripts: Any) -> dict[str, FunctionModel]:
    """name=[entries] or name=responder: one in-process FunctionModel per agent."""
    return {
        name: FunctionModel(script) if isinstance(script, list) else FunctionModel(default=script)
        for name, script in scripts.items()
    }


@asynccontextmanager
async def in_process(
    client: Any,
    factory: str,
    home: Path,
    models: dict[str, FunctionModel],
    monkeypatch: Any,
    env: dict[str, str] | None = None,
    capabilities: Any = None,
    features: Any = None,
) -> AsyncIterator[Any]:
    """The same graph as `serve`, built and driven in this process: each agent's model is its FunctionModel.

    Agents are made by tests/agents/multi_agents.py from configs whose model is "scripted-<name>";
    every model client made meanwhile is that name's FunctionModel (with the config's profile).
    """
    for key, value in {**crow_env(home, "http://127.0.0.1:9/v1"), **(env or {})}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("OPENAI_BASE_URL")
    for name in models:
        monkeypatch.setenv(f"CROW_TEST_MODEL_{name.upper()}_URL", "http://127.0.0.1:9/v1")

    def client_for(config: Any) -> FunctionModel:
        model = models[config.profile().model.removeprefix("scripted-")]
        model.profile = config.profile()
        return model

    monkeypatch.setattr(crow_acp.model.profiles, "make_client", client_for)
    agent = load_agent(f"{AGENTS}:{factory}", None)
    agent.on_connect(client)
    await agent.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities, client_features=features
    )
    try:
        yield agent
    finally:
        await agent.shutdown()
