"""A callback naming a keyword its list never passes is refused when it is added, on every path a
user adds callbacks by; one with **kwargs gets every keyword; every callback of the repo still registers."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.helpers import RecordingClient, in_process, text

from crow_acp import AcpAgent, CrowCallbacks, load_config
from crow_acp.api import HOOKS, PASSES
from crow_acp.errors import ConfigError, HookSignatureError
from crow_acp.testing import Reply
from crow_acp.testing.function_model import FunctionModel

AGENTS = Path(__file__).parents[1] / "agents"


async def misspelled(session, *, stop_reasn=None):  # stop_reason, misspelled: it would never come
    pass


async def fine(session, *, stop_reason, **kwargs):
    pass


MESSAGE = (
    "test_hook_signatures.misspelled cannot be added to end_turn: it names the keyword parameter 'stop_reasn', "
    "which end_turn never passes. end_turn passes the session and command, error, hook, stop_reason; "
    "a callback that takes **kwargs gets them all."
)


def registrations() -> dict[str, Callable[[CrowCallbacks], Any]]:
    """Every way a user adds an end_turn callback today (crow.patterns, presets, tests, the README)."""
    agent = AcpAgent(load_config())
    return {
        "construct": lambda _: CrowCallbacks(end_turn=[fine, misspelled]),
        "append": lambda cb: cb.end_turn.append(misspelled),
        "insert": lambda cb: cb.end_turn.insert(0, misspelled),
        "extend": lambda cb: cb.end_turn.extend([misspelled]),
        "+=": lambda cb: cb.end_turn.__iadd__([misspelled]),
        "[i] =": lambda cb: cb.end_turn.__setitem__(0, misspelled),
        "[:] =": lambda cb: cb.end_turn.__setitem__(slice(None), [misspelled]),
        "assign": lambda cb: setattr(cb, "end_turn", [misspelled]),
        "+": lambda cb: cb + CrowCallbacks.model_construct(end_turn=[misspelled]),
        "set_callbacks": lambda _: agent.set_callbacks(CrowCallbacks.model_construct(end_turn=[misspelled])),
        "agent.callbacks": lambda _: agent.callbacks.end_turn.append(misspelled),
    }


@pytest.mark.parametrize("path", list(registrations()))
def test_a_misspelled_keyword_is_refused_when_added(crow_home, monkeypatch, path):
    monkeypatch.setenv("CROW_HOME", str(crow_home))
    callbacks = CrowCallbacks(end_turn=[fine])
    with pytest.raises(HookSignatureError) as refused:
        registrations()[path](callbacks)
    assert str(refused.value) == MESSAGE
    assert isinstance(refused.value, ConfigError) and isinstance(refused.value, TypeError)
    assert callbacks.end_turn == [fine]  # nothing was added


def test_the_message_names_each_lists_keywords_and_positional_extras_are_refused():
    async def needs_more(session, extra, /):
        pass

    with pytest.raises(HookSignatureError, match=r"positional-only parameter 'extra' is never given by pre_request"):
        CrowCallbacks(pre_request=[needs_more])
    with pytest.raises(
        HookSignatureError,
        match=r"'loaded', which pre_request never passes\. pre_request passes "
        r"the session and hook, step;",
    ):
        CrowCallbacks(pre_request=[lambda session, *, loaded: None])
    with pytest.raises(HookSignatureError, match="no parameter for the session"):
        CrowCallbacks(end_session=[lambda: None])
    for name in HOOKS:  # what a well-formed callback of every list may name
        keywords = ", ".join(sorted(PASSES[name]))
        exec(f"async def every(session, *, {keywords}): pass", scope := {})
        CrowCallbacks(**{name: [scope["every"]]})


@pytest.mark.anyio
async def test_a_callback_with_kwargs_gets_every_keyword(crow_home, tmp_path):
    seen: dict[str, set[str]] = {}

    def record(session, **kwargs):
        seen.setdefault(kwargs["hook"], set()).update(kwargs)

    callbacks = CrowCallbacks(**{name: [record] for name in HOOKS})
    agent = AcpAgent(load_config(home=crow_home))
    agent.set_callbacks(callbacks)
    FunctionModel([Reply(text="ok")]).install(agent)
    agent.on_connect(RecordingClient())
    async with in_process(agent) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text("hi")])).stop_reason == "end_turn"
    assert seen == {
        name: set(PASSES[name]) for name in ("begin_session", "pre_request", "post_response", "end_turn", "end_session")
    }


def test_every_callback_in_the_repo_still_registers(crow_home, monkeypatch):
    """The default agent, each pattern and preset, and every agent factory the tests serve."""
    monkeypatch.setenv("CROW_HOME", str(crow_home))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    from crow.presets import default_agent

    built: list[Any] = [default_agent()]
    monkeypatch.syspath_prepend(str(AGENTS))  # as `crow acp --agent tests/agents/x.py:build` imports them
    for path in sorted(AGENTS.glob("*.py")):
        if path.stem not in sys.modules:  # other tests load them afresh
            monkeypatch.setitem(sys.modules, path.stem, None)
            monkeypatch.delitem(sys.modules, path.stem)
        module = importlib.import_module(path.stem)
        if hasattr(module, "config_for"):  # multi_agents.py: a scripted model per role, never called here
            monkeypatch.setattr(
                module,
                "config_for",
                lambda name: load_config(
                    model="m", models={"m": {"model": f"scripted-{name}", "base_url": "http://127.0.0.1:9/v1"}}
                ),
            )
        for name, factory in vars(module).items():
            if name.startswith("build") and inspect.isfunction(factory) and factory.__module__ == module.__name__:
                built.append(factory())
    agents = [a for b in built for a in (getattr(b, "members", None) or [b]) if isinstance(a, AcpAgent)]
    assert len(agents) >= 20
    for agent in agents:
        agent.callbacks.check()
        for name in HOOKS:
            CrowCallbacks(**{name: list(getattr(agent.callbacks, name))})
