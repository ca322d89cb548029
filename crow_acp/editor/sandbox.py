"""Local commands in a bubblewrap sandbox: what they may see, write and reach, and how much they may use.

    bwrap --ro-bind / /  --dev /dev --proc /proc                  the host, read-only
          --size N --tmpfs /tmp --tmpfs /run ...                  private /tmp (capped), /run, $XDG_RUNTIME_DIR
          --tmpfs ~ --ro-bind ~/.cargo ~/.cargo ...                an empty $HOME but its toolchains (sandbox_fs.py)
          --unshare-user --disable-userns --cap-drop ALL          no capability, even when crow runs as root
          --unshare-pid --die-with-parent [--unshare-net]          its own PID namespace; no network
          --bind-fd N ROOT ...                                      the roots crow opened once, writable
          --ro-bind-fd N ROOT/.git ...                              protected paths in them, read-only
          --tmpfs ~/.ssh ... --ro-bind /dev/null ~/.netrc ...       crow's home and secret stores: empty
          --seccomp N                                               no AF_UNIX socket (seccomp.py)
          -- bash -c 'ulimit -u N -t S -v KB && exec bash -c "$1"'  the limits, then the command

As root (crow runs as root in most containers and CI runners) bwrap would keep every capability, and
a command could remount / writable or unmount what hides a secret: the user namespace maps the
caller's uid and holds no capability over the host's mounts, and `--disable-userns` stops a command
from making another one. The roots are the real paths the workspace resolved once
(Confined.real_roots), opened here and bound by descriptor: a symlink swapped in after the check
cannot redirect the writable mount. Hidden paths are hidden at their real location, after the roots
are bound, so a root that holds $HOME does not show its ~/.ssh. When the namespace's first process
dies, the kernel kills every process in it: a `setsid` or double-forked child cannot outlive the
command (the guard kills bwrap, bwrap's child dies with it, and the namespace with that).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..api import Sandbox
from ..config import crow_home

if TYPE_CHECKING:
    from ..config import McpServerConfig, SandboxConfig

SECRET_STORES = (
    ".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".docker/config.json", ".kube",
    # tokens other tools keep in plain files: git's credential store, package registries, cloud CLIs
    ".git-credentials", ".npmrc", ".pypirc", ".config/gcloud", ".azure", ".password-store",
    ".config/git/credentials", ".cargo/credentials.toml", ".cargo/credentials", ".claude", ".claude.json",
    ".codex", ".pgpass", ".my.cnf", ".vault-token", ".terraform.d/credentials.tfrc.json", ".bash_history",
    ".zsh_history", ".python_history", ".psql_history", ".mysql_history", ".lesshst", ".local/share/keyrings",
    ".config/hub", ".config/glab-cli", ".local/share/fish/fish_history",
)  # fmt: skip
"""Below $HOME: never visible to a sandboxed command (the [sandbox] hidden list adds to them)."""
PRIVATE_TMP = "/tmp"
SHELL = shutil.which("bash", path=os.defpath) or "/bin/sh"
"""Sets a sandboxed server's limits (dash's `ulimit` has no -u)."""
PROBE_TIMEOUT = 10.0
NAMESPACE_FIX = (
    "allow unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` (Debian), "
    "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile for bwrap (Ubuntu), "
    "`sysctl -w user.max_user_namespaces=15000` (others)"
)
MISSING = "bubblewrap (bwrap) is not installed: install the `bubblewrap` package (Debian: apt-get install bubblewrap)"

_probed: dict[str, str | None] = {}  # bwrap path -> why it cannot sandbox here (None: it can); one probe each


@dataclass(frozen=True)
class SandboxNotice:
    """What the user is told once when commands cannot be sandboxed: `crow run`'s warning, the editor's notice."""

    title: str
    description: str

    def line(self) -> str:
        return f"{self.title}: {self.description}"

    @classmethod
    def because(cls, why: str) -> SandboxNotice:
        after = (
            "Auto and Plan ask before every command, as Ask does; nothing runs outside the sandbox without a question"
        )
        return cls("Commands cannot run in the sandbox", f"{why}. Until then {after}.")


def unavailable() -> str | None:
    """Why commands cannot be sandboxed on this machine, with the fix; None when they can. Blocks."""
    path = shutil.which("bwrap")
    if path is None:
        return MISSING
    if path not in _probed:
        _probed[path] = _probe(path)
    return _probed[path]


def _probe(path: str) -> str | None:
    probe = [path, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", *NAMESPACES, "--unshare-net"]
    try:
        done = subprocess.run([*probe, "--", "true"], capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap ({path}) does not run: {exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode(errors="replace").strip().splitlines()
    if said and "Unknown option" in said[-1]:  # --disable-userns came with 0.8.0
        return f"bubblewrap ({path}) is too old ({said[-1]}): crow's sandbox needs bubblewrap 0.8.0 or later"
    return f"bubblewrap cannot create its namespaces ({said[-1] if said else done.returncode}): {NAMESPACE_FIX}"


def hidden_paths(sandbox: Sandbox) -> list[str]:
    """The real paths to hide: crow's home, the secret stores below $HOME, and the configured ones."""
    home = os.path.expanduser("~")
    listed = [str(crow_home()), *(os.path.join(home, store) for store in SECRET_STORES), *sandbox.hidden]
    return list(dict.fromkeys(os.path.realpath(os.path.expanduser(path)) for path in listed))


@contextmanager
def opened(paths: list[str]) -> Iterator[list[tuple[int, str]]]:
    """Each directory opened once (O_PATH), with the path it is mounted at; closed after the command starts."""
    fds: list[tuple[int, str]] = []
    try:
        for path in dict.fromkeys(paths):
            fds.append((os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), path))
        yield fds
    finally:
        for fd, _ in fds:
            os.close(fd)


def writable_dirs(sandbox: Sandbox, roots: tuple[str, ...]) -> list[str]:
    """The real directories a command may write: none in a read-only sandbox; those that exist."""
    if sandbox.level != "workspace":
        return []
    return [path for path in outermost([*roots, *sandbox.writable]) if os.path.isdir(path)]


def outermost(paths: list[str], others: list[str] | None = None) -> list[str]:
    """The real paths of those (~ expanded) no part of whose way lies in another one of them, or in `others`
    (written to by other sandboxes): only these are bound. One below another is writable through it
    already, and bound on its own it would let a command swap a part of its way (a symlink where a
    directory was) so that the next command gets another place writable. A path kept cannot be changed
    from inside: every directory on its way is read-only there."""
    wanted = [os.path.normpath(os.path.expanduser(path)) for path in paths]
    areas = [os.path.realpath(path) for path in wanted]
    beside = [os.path.realpath(os.path.expanduser(path)) for path in others or []]
    kept = (real for path, real in zip(wanted, areas, strict=True) if not _below(path, [*areas, *beside]))
    return list(dict.fromkeys(kept))


def _below(path: str, areas: list[str]) -> bool:
    """Whether a directory on the way to `path` (itself excluded) really lies in one of the areas."""
    parent = os.path.dirname(path)
    while True:
        real = os.path.realpath(parent)
        if any(real == area or real.startswith(area.rstrip(os.sep) + os.sep) for area in areas):
            return True
        if parent == os.path.dirname(parent):
            return False
        parent = os.path.dirname(parent)


def bwrap_argv(
    bwrap: str,
    sandbox: Sandbox,
    shell: str,
    command: str,
    cwd: str,
    binds: list[tuple[int, str]],
    readable: list[str],
    late: tuple[str, ...] | list[str] = (),
) -> list[str]:
    """The whole command line: bwrap, its mounts and namespaces, the limits, then the shell and command.
    `binds` are the writable roots (descriptor, mount point); `readable` the roots a read-only sandbox
    shows again over the private /tmp; `late` the options after the hidden paths (protected paths bound
    read-only, the seccomp filter's descriptor)."""
    argv = [bwrap, *opening(sandbox)]
    for root in readable:
        argv += ["--ro-bind", root, root]
    for fd, path in binds:
        argv += ["--bind-fd", str(fd), path]
    argv += [arg for path in pins(sandbox, [path for _, path in binds]) for arg in ("--bind", path, path)]
    return [*argv, *hiding(sandbox), *late, *closing(sandbox, shell, command, cwd)]


def pins(sandbox: Sandbox, areas: list[str]) -> list[str]:
    """The directories between a writable area and a hidden path inside it (a workspace that holds $HOME and
    its ~/.config/gh), outer first. Each is bound onto itself, still writable: a mount point cannot be
    renamed, so no command can move a store out from under the name that hides it for the next one."""
    found: set[str] = set()
    for path in hidden_paths(sandbox):
        for area in areas:
            inside = area.rstrip(os.sep) + os.sep
            parent = os.path.dirname(path)
            while parent.startswith(inside):
                found.add(parent)
                parent = os.path.dirname(parent)
    return sorted((path for path in found if os.path.isdir(path) and not os.path.islink(path)), key=len)


def hiding(sandbox: Sandbox) -> list[str]:
    """After the writable mounts: an empty tmpfs over each hidden directory, /dev/null over each hidden file."""
    argv: list[str] = []
    for path in hidden_paths(sandbox):
        if os.path.isdir(path):
            argv += ["--tmpfs", path]
        elif os.path.lexists(path):
            argv += ["--ro-bind", os.devnull, path]
    return argv


NAMESPACES = ("--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session")  # fmt: skip  # noqa: E501
"""Every bwrap line's: a user namespace of its own and no capability (as root too), its own PIDs, IPC, host name."""


def opening(sandbox: Sandbox) -> list[str]:
    """bwrap's options before the roots: the host read-only, minimal /dev and /proc, private /tmp, /run and
    $HOME (but its toolchains), namespaces."""
    from .sandbox_fs import home_args, runtime_args

    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *runtime_args(sandbox), *home_args(sandbox)]
    return [*argv, *namespaces(sandbox)]


def namespaces(sandbox: Sandbox) -> list[str]:
    return [*NAMESPACES, "--unshare-net"] if not sandbox.network else list(NAMESPACES)


def closing(sandbox: Sandbox, shell: str, command: str, cwd: str) -> list[str]:
    """bwrap's options after the mounts, then the limits and the command (never part of a shell script)."""
    limits = f"ulimit -u {sandbox.max_processes} -t {sandbox.cpu_seconds} -v {sandbox.memory_mb * 1024}"
    tail = ["--chdir", cwd, "--setenv", "TMPDIR", PRIVATE_TMP, "--"]
    return [*tail, shell, "-c", f'{limits} && exec "$0" -c "$1"', shell, command]


def server_prefix(config: SandboxConfig, server: McpServerConfig, cwd: str) -> list[str] | str:
    """What a stdio MCP server with `sandbox = true` runs behind (its command and arguments follow), or why it
    cannot be sandboxed here (then it does not start). Everything read-only but its `writable` paths and a
    private /tmp; the network per its `network`; crow's home and the secret stores hidden; no unix socket
    (the filter is written to a file by a shell and handed to bwrap on fd 9); the process and memory
    limits of [sandbox] (not its CPU seconds: a server lives as long as its session)."""
    from .sandbox_fs import home_readonly
    from .seccomp import AUDIT_ARCH, SHELL_LOADER, escaped

    if why := unavailable():
        return why
    sandbox = Sandbox(
        network=server.network, writable=tuple(server.writable), hidden=tuple(config.hidden),
        memory_mb=config.memory_mb, home_visible=tuple(config.home_visible),
    )  # fmt: skip
    writable = outermost(server.writable, [cwd, *config.writable])  # not below where commands write
    argv = [shutil.which("bwrap") or "bwrap", *opening(sandbox), "--ro-bind", cwd, cwd]  # cwd: even below /tmp
    argv += [arg for path in _program_hidden(server) for arg in ("--ro-bind", path, path)]
    writable = [path for path in writable if os.path.isdir(path)]
    argv += [arg for path in [*writable, *pins(sandbox, writable)] for arg in ("--bind", path, path)]
    limits = f"ulimit -u {config.max_processes} -v {config.memory_mb * 1024}"
    tail = ["--chdir", cwd, "--setenv", "TMPDIR", PRIVATE_TMP, "--", SHELL, "-c", f'{limits} && exec "$@"', "sh"]
    argv += [*hiding(sandbox), *home_readonly([cwd, *writable])]
    if (machine := platform.machine()) not in AUDIT_ARCH:
        return [*argv, *tail]
    loader = ["/bin/sh", "-c", SHELL_LOADER, "crow-seccomp", escaped(machine)]
    return [*loader, *argv, "--seccomp", "9", *tail]


def _program_hidden(server: McpServerConfig) -> list[str]:
    """The server's own program where the private /tmp or $HOME would hide it (a checkout or venv there): the
    directory of each absolute path its command line names there, a venv's whole root for its interpreter."""
    home = os.path.realpath(os.path.expanduser("~"))
    private = [PRIVATE_TMP, home] if home != os.sep else [PRIVATE_TMP]
    found: list[str] = []
    for arg in [shutil.which(server.command or "") or "", *server.args]:
        if not (os.path.isabs(arg) and os.path.exists(arg) and _below(arg, private)):
            continue
        where = os.path.dirname(arg)
        venv = os.path.dirname(where)
        found.append(venv if os.path.exists(os.path.join(venv, "pyvenv.cfg")) else where)
    return sorted(set(found), key=len)


BLAMED = {
    "Read-only file system": "a write outside the writable roots was refused (read-only file system)",
    "Permission denied": "an access was refused (the sandbox may hide or protect that path)",
    "crow: the sandbox removed": "what it created at a protected path was removed (it would run later, outside)",
    "Could not resolve host": "a host name did not resolve: the sandbox has no network",
    "Temporary failure in name resolution": "a host name did not resolve: the sandbox has no network",
    "Network is unreachable": "the network is unreachable: the sandbox has no network",
    "Name or service not known": "a host name did not resolve: the sandbox has no network",
}


def blame(output: str, sandbox: Sandbox) -> str | None:
    """A note for the model when a failed command's output shows the sandbox's hand, naming the way out."""
    reasons = [
        why for sign, why in BLAMED.items() if sign in output and (sandbox.network is False or "network" not in why)
    ]
    if sandbox.level == "off" or not reasons:
        return None
    ways = 'call run_command again with `"sandbox": "network"` (network on) or `"sandbox": "off"` (outside it)'
    return (
        f"Note: this command ran {sandbox.describe()}; {'; '.join(dict.fromkeys(reasons))}. "
        f"If it needs more, {ways}: the user is asked."
    )
