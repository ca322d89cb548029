"""Starting one local command in the sandbox: the roots opened once, protected paths and the seccomp filter
handed to bwrap by descriptor, a pids cgroup where one can be had (see sandbox.py for the line itself)."""

from __future__ import annotations

import contextlib
import os
import shutil

import anyio

from ..api import Sandbox
from ..util.secrets import child_env
from .paths import ToolError
from .processes import Guarded
from .processes import start as start_guarded
from .terminal_sandbox import QUIET


async def start_sandboxed(
    sandbox: Sandbox, shell: str, command: str, cwd: str, roots: tuple[str, ...]
) -> tuple[Guarded, str | None, list[str]]:
    """The command started below its guard, the cgroup to remove after it (or None), and the protected
    paths that did not exist (sandbox_fs.planted looks for them once it has ended).
    `roots` are the real paths the workspace resolved once, when the session's tools were made."""
    from .pids_cgroup import create as create_cgroup
    from .pids_cgroup import wrap as in_cgroup
    from .sandbox import bwrap_argv, opened, unavailable, writable_dirs
    from .sandbox_fs import home_readonly, protected_binds
    from .seccomp import pipe as seccomp_pipe

    if why := await anyio.to_thread.run_sync(unavailable):
        raise ToolError(f"The command cannot be sandboxed here: {why}. It was not run.")
    with contextlib.ExitStack() as stack:
        filter_fd = seccomp_pipe()
        if filter_fd is not None:
            stack.callback(os.close, filter_fd)
        binds = stack.enter_context(opened(writable_dirs(sandbox, roots)))
        protect, absent = stack.enter_context(protected_binds(sandbox, [path for _, path in binds]))
        readable = list(roots)  # shown over the private /tmp and $HOME; writable where bound again
        late = [*protect, *home_readonly(readable), *(["--seccomp", str(filter_fd)] if filter_fd is not None else [])]
        argv = bwrap_argv(shutil.which("bwrap") or "bwrap", sandbox, shell, command, cwd, binds, readable, late)
        cgroup = create_cgroup(sandbox.max_processes)
        fds = [fd for fd, _ in binds] + [int(arg) for arg in protect[1::3]]
        fds += [filter_fd] if filter_fd is not None else []
        env = child_env(explicit=QUIET)
        process = await start_guarded(*(in_cgroup(cgroup, argv) if cgroup else argv), cwd=cwd, env=env, pass_fds=fds)
    return process, cgroup, absent
