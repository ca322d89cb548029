"""crow_acp: the ACP agent server core.

The plugin-facing API (callbacks, hook types, tools, slash commands, SessionAccess) is
crow_acp/api.py, readable top to bottom. Public names load lazily, so `crow acp` answers `initialize`
without importing what a turn needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__ as __version__

_ELSEWHERE = {
    "AcpAgent": "crow_acp.acp.agent",
    "Config": "crow_acp.config",
    "FunctionModel": "crow_acp.testing.function_model",
    "load_config": "crow_acp.config",
    "MultiAgent": "crow_acp.multi",
    "permission_policy": "crow_acp.core.tool_gate",
    "RunError": "crow_acp.acp.run",
    "RunResult": "crow_acp.acp.run",
    "serve": "crow_acp.server.stdio",
}
"""The public names beside the plugin API. Every name in crow_acp.api.__all__ is public here too:
it is listed once, there."""

if TYPE_CHECKING:
    from .acp.agent import AcpAgent as AcpAgent
    from .acp.run import RunError as RunError
    from .acp.run import RunResult as RunResult
    from .api import *  # noqa: F403 (the whole plugin API, as api.__all__ lists it)
    from .config import Config as Config
    from .config import load_config as load_config
    from .core.tool_gate import permission_policy as permission_policy
    from .multi import MultiAgent as MultiAgent
    from .server.stdio import serve as serve
    from .testing.function_model import FunctionModel as FunctionModel


def __getattr__(name: str) -> Any:
    """Each public name loads on first use; __all__ too, since it includes the plugin API's."""
    import importlib

    if name in _ELSEWHERE:
        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    if name.startswith("_") and name != "__all__":  # probes (pytest, inspect) load nothing
        raise AttributeError(f"module 'crow_acp' has no attribute {name!r}")
    api = importlib.import_module("crow_acp.api")
    if name == "__all__":
        return [*_ELSEWHERE, *api.__all__]
    if name not in api.__all__:
        raise AttributeError(f"module 'crow_acp' has no attribute {name!r}")
    return getattr(api, name)
