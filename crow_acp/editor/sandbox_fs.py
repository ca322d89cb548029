"""What a sandboxed command sees of the file system besides its roots: private runtime directories, an
allow list of $HOME, and protected paths it can read but never write.

- /run, /var/run, $XDG_RUNTIME_DIR and /tmp are private (empty tmpfs): no agent, bus or docker socket
  in them is reachable (seccomp.py refuses the rest). /etc/resolv.conf, when it points below /run
  (systemd-resolved), is shown again read-only so that a command with the network still resolves.
- $HOME is an empty tmpfs but for the toolchain directories (TOOLCHAIN, the [sandbox] home_visible
  ones, and PATH's directories below $HOME), shown read-only, and the workspace roots: ~/.bash_history,
  ~/.pgpass, ~/.claude or ~/.codex are simply not there. A root that holds $HOME shows all of it, but
  the secret stores (sandbox.py hides them).
- Inside the writable areas, the protected paths (config/protected.py: the one list write_file asks
  for) and, in a $HOME that is writable, the shell's start-up files and autostart (HOME_RC), are bound
  read-only: opened once here and bound by descriptor at their real place. One that does not exist
  yet cannot be bound without creating it on the host; so it is looked for again when the command has
  ended (then nothing of it runs: the namespace died with it) and, if the command made it, removed, and
  the model told to ask for the command outside the sandbox.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
from collections.abc import Iterator

from ..api import Sandbox

PRIVATE_RUNTIME = ("/run", "/var/run")
RUNTIME_DIR = "XDG_RUNTIME_DIR"
TOOLCHAIN = (
    ".pyenv", ".cargo", ".rustup", ".nvm", ".npm", ".node-gyp", ".yarn", ".bun", ".deno", "go", ".local",
    ".cache", ".sdkman", ".gradle", ".m2", ".rbenv", ".gem", ".elan", ".ghcup", ".opam", ".asdf",
    ".gitconfig", ".config/git/config", ".config/git/ignore",
)  # fmt: skip
"""Below $HOME: shown read-only to sandboxed commands (their secret files are hidden again, sandbox.py)."""
HOME_RC = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
    ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".mkshrc", ".inputrc", ".xprofile", ".xinitrc",
    ".xsession", ".pam_environment", ".config/fish", ".config/autostart", ".config/systemd", ".config/environment.d",
    ".config/nushell", ".local/share/systemd", ".gitconfig", ".config/git",
)  # fmt: skip
"""Below a writable $HOME: what runs (or configures what runs) outside the sandbox later."""


def runtime_args(sandbox: Sandbox) -> list[str]:
    """A private (capped) /tmp, /run, /var/run and $XDG_RUNTIME_DIR; resolv.conf shown again."""
    argv = ["--size", str(sandbox.memory_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    done: set[str] = {"/tmp"}
    for path in [*PRIVATE_RUNTIME, os.environ.get(RUNTIME_DIR) or ""]:
        real = os.path.realpath(path) if path else ""
        if real and os.path.isdir(real) and not any(_inside(real, other) for other in done):
            argv += ["--tmpfs", real]
            done.add(real)
    resolv = os.path.realpath("/etc/resolv.conf")
    if any(_inside(resolv, other) for other in done) and os.path.isfile(resolv):
        argv += ["--ro-bind", resolv, resolv]
    return argv


def _inside(path: str, area: str) -> bool:
    return path == area or path.startswith(area.rstrip(os.sep) + os.sep)


def home_args(sandbox: Sandbox) -> list[str]:
    """An empty $HOME with its toolchain directories shown again read-only (before the roots are bound)."""
    home = os.path.realpath(os.path.expanduser("~"))
    if home == os.sep or not os.path.isdir(home):
        return []
    wanted = [*TOOLCHAIN, *sandbox.home_visible]
    below = [entry for entry in os.get_exec_path() if os.path.isabs(entry)]
    shown: list[str] = []
    for path in [*(os.path.join(home, os.path.expanduser(item)) for item in wanted), *below]:
        real = os.path.realpath(path)
        if real != home and _inside(real, home) and os.path.exists(real):
            shown.append(real)
    kept = [path for path in dict.fromkeys(shown) if not any(_inside(path, o) and path != o for o in shown)]
    return ["--tmpfs", home, *(arg for path in sorted(kept) for arg in ("--ro-bind", path, path))]


def home_readonly(shown: list[str]) -> list[str]:
    """After every mount: the private $HOME made read-only, unless a root shown (or bound) holds it. A write
    there would only vanish with the command; now it fails, and the model reads why."""
    home = os.path.realpath(os.path.expanduser("~"))
    if home == os.sep or not os.path.isdir(home) or any(_inside(home, root) for root in shown):
        return []
    return ["--remount-ro", home]


def candidates(sandbox: Sandbox, areas: list[str]) -> list[str]:
    """The protected paths inside the writable areas, as they would be named there (existing or not)."""
    home = os.path.realpath(os.path.expanduser("~"))
    found: list[str] = []
    for area in areas:
        for pattern in sandbox.protected:
            if any(c in pattern for c in "*?["):
                found += glob.glob(os.path.join(glob.escape(area), pattern), include_hidden=True)
            else:
                found.append(os.path.join(area, pattern))
        if _inside(home, area):
            found += [os.path.join(home, name) for name in HOME_RC]
    return list(dict.fromkeys(found))


@contextlib.contextmanager
def protected_binds(sandbox: Sandbox, areas: list[str]) -> Iterator[tuple[list[str], list[str]]]:
    """(bwrap's --ro-bind-fd options for the protected paths that exist, the candidates that do not):
    each opened (O_PATH) at its real place, which must lie in a writable area to matter."""
    argv: list[str] = []
    absent: list[str] = []
    fds: list[int] = []
    try:
        for path in candidates(sandbox, areas):
            if not os.path.lexists(path):
                absent.append(path)
                continue
            real = os.path.realpath(path)
            if not any(_inside(real, area) for area in areas) or not os.path.exists(real):
                continue  # read-only already: elsewhere, or a dangling link (its target is a candidate)
            fd = os.open(real, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            fds.append(fd)
            argv += ["--ro-bind-fd", str(fd), real]
        yield argv, absent
    finally:
        for fd in fds:
            os.close(fd)


def planted(absent: list[str]) -> list[str]:
    """The protected paths that were absent and a command made: removed (a link itself, not its target)."""
    made = [path for path in absent if os.path.lexists(path)]
    for path in made:
        if os.path.realpath(os.path.dirname(path)) != os.path.dirname(path):
            _unlink(_first_link(path))  # `.github -> x` with x/workflows: the link goes, what it names stays
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    return made


def _first_link(path: str) -> str:
    """The first component of the way to `path` that is a symbolic link (the areas are real paths: it lies in one)."""
    way = os.sep
    for part in path.split(os.sep)[1:]:
        way = os.path.join(way, part)
        if os.path.islink(way):
            return way
    return path


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
        os.unlink(path)


def planted_note(made: list[str]) -> str:
    names = ", ".join(made[:5]) + (", …" if len(made) > 5 else "")
    return (
        f"Note: the sandbox removed what this command created at protected paths ({names}): such files "
        'make code run later, outside the sandbox. If it must, call run_command again with `"sandbox": "off"`: '
        "the user is asked."
    )
