"""Starting a stdio MCP server so that it never outlives crow.

The MCP SDK spawns the server itself (in a process group of its own) and, when crow closes it,
closes its stdin, then SIGTERMs and SIGKILLs the group. That covers an orderly close only: were
crow SIGKILLed, a server that ignores its stdin closing would run on forever. So the SDK is
given mcp_guard.py to start, which starts the real server as its child and kills the group
when crow is gone (see there).

The server's environment is crow's allow list (util/environment.py: locale, PATH, HOME, TERM, the
proxies, toolchain homes, `[sandbox] env_inherit`) plus what its config passes; never a secret or
crow's model keys unless the config passes one explicitly.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from typing import Any

from .specs import ServerSpec

GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.py")


def stdio_transport(spec: ServerSpec, cwd: str) -> Any:
    """The SDK's stdio client for the server, started under the guard."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    from ..util.secrets import child_env

    env = child_env(None, spec.env)
    executable = resolve(spec.command or "", cwd, env.get("PATH"))
    if isinstance(spec.confine, str):
        raise RuntimeError(f"the server asks for a sandbox (sandbox = true), and {spec.confine}; it was not started")
    argv = [*(spec.confine or []), executable, *spec.args]
    params = StdioServerParameters(
        command=sys.executable, args=["-I", "-S", GUARD, str(os.getpid()), *argv], env=env, cwd=cwd,
        encoding_error_handler="replace",  # one bad byte must not kill the server's reader for good
    )  # fmt: skip
    return stdio_client(params, errlog=sys.stderr)


def resolve(command: str, cwd: str, path: str | None) -> str:
    """The executable a command names, as exec would find it from cwd with the server's PATH.

    Here, not in the guard, so that a missing command fails the start with a clear error."""
    found: str | None
    if "/" in command:
        named = os.path.join(cwd, command)
        found = named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    else:
        found = shutil.which(command, path=path if path is not None else os.defpath) if command else None
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "command not found", command)
    return os.path.abspath(found)
