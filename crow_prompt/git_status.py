"""`git status` for the system prompt, without letting the repository run anything.

A repository is untrusted: its `.git/config` (or that of a bare repository planted inside it, or
of a `.git` copied in with a tarball) can name commands that `git status` runs by itself:
`core.fsmonitor`, a `filter.<driver>.clean` that `.gitattributes` selects, and whatever later git
versions add. Overriding known keys with `-c` is a list that is never complete, so git never reads
that config at all. Crow lays a scratch git directory: a config it writes itself (a few plain
settings copied from the real one, checked to be bare words), and symlinks to the repository's
HEAD, index, objects and refs. git gets it through GIT_DIR and the root as GIT_WORK_TREE, so it
discovers nothing either (no implicit bare repository), and runs with no system or global config,
no hooks, no pager, no prompt and no submodules.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import stat
import tempfile
from pathlib import Path

from crow_acp.util.secrets import child_env

log = logging.getLogger(__name__)

GIT_TIMEOUT = 3.0
COPIED = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.ignorecase", "core.symlinks",
    "core.precomposeunicode", "core.checkstat", "core.trustctime", "extensions.objectformat",
})  # fmt: skip
"""Settings that change what status counts and can run nothing; every other key is left behind."""
_BARE_WORD = re.compile(r"[A-Za-z0-9_.-]{1,40}")
FROM_GIT_DIR = ("index",)
"""Per worktree: in the directory `.git` names. HEAD is copied: git takes a symlinked HEAD for a
symbolic ref to the link's target."""
FROM_COMMON_DIR = ("objects", "refs", "packed-refs", "info")
"""Shared by all worktrees: in the directory `commondir` names (the same one outside worktrees)."""
HARDENING = (
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.untrackedCache=false",
    "-c", "status.submoduleSummary=false", "-c", "safe.bareRepository=explicit", "--no-pager",
)  # fmt: skip
"""Belt and braces: the scratch config sets none of these, and the command line wins over any file."""


def git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(the git directory, the common directory) of the repository whose working tree is `root`."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: ".git" names the real directory
            git = root / git.read_text(errors="replace").split("gitdir:", 1)[1].strip()
        common = git / (git / "commondir").read_text().strip() if (git / "commondir").is_file() else git
    except (OSError, IndexError):
        return None
    return (git, common) if git.is_dir() else None


def read_head(git: Path) -> str | None:
    """The text of HEAD, if it is a small regular file (a FIFO planted there must not hang crow)."""
    try:
        fd = os.open(git / "HEAD", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode(errors="replace") if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


async def porcelain_status(root: Path) -> str | None:
    """`git status --porcelain=v2 --branch` of the working tree `root`; None if it cannot be had."""
    dirs = git_dirs(root)
    if dirs is None:
        return None
    with tempfile.TemporaryDirectory(prefix="crow-git-") as scratch:
        env = _env(Path(scratch), root)
        settings = await _git(["config", "--file", str(dirs[1] / "config"), "--null", "--list"], root, env)
        _lay_scratch(Path(scratch), *dirs, _copied(settings or ""))
        status = ["status", "--porcelain=v2", "--branch", "--ignore-submodules=all"]
        return await _git(status, root, env)


def _env(scratch: Path, root: Path) -> dict[str, str]:
    env = {name: value for name, value in child_env().items() if not name.startswith("GIT_")}
    return env | {
        "GIT_DIR": str(scratch), "GIT_WORK_TREE": str(root), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_CEILING_DIRECTORIES": str(root.parent),
    }  # fmt: skip


def _copied(listing: str) -> dict[str, str]:
    """The COPIED settings of a `git config --null --list` listing, when their values are bare words."""
    settings = {}
    for entry in listing.split("\0"):
        key, _, value = entry.partition("\n")
        if key.lower() in COPIED and _BARE_WORD.fullmatch(value):
            settings[key.lower()] = value
    return settings


def _lay_scratch(scratch: Path, git: Path, common: Path, settings: dict[str, str]) -> None:
    sections: dict[str, list[str]] = {"core": ["bare = false"]}
    for key, value in sorted(settings.items()):
        section, name = key.split(".", 1)
        sections.setdefault(section, []).append(f"{name} = {value}")
    text = "".join(f"[{section}]\n" + "".join(f"\t{line}\n" for line in lines) for section, lines in sections.items())
    (scratch / "config").write_text(text)
    (scratch / "HEAD").write_text(read_head(git) or "")
    for name, source in [*((n, git) for n in FROM_GIT_DIR), *((n, common) for n in FROM_COMMON_DIR)]:
        if os.path.lexists(source / name):
            (scratch / name).symlink_to(source / name)
    for shared in git.glob("sharedindex.*"):  # a split index names its other half in the git directory
        (scratch / shared.name).symlink_to(shared)


async def _git(args: list[str], cwd: Path, env: dict[str, str]) -> str | None:
    """git's stdout, or None when it is missing, fails or takes over GIT_TIMEOUT."""
    try:
        process = await asyncio.create_subprocess_exec(
            "git", *HARDENING, *args,
            cwd=cwd, env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,  # never inherit stdout: it is the ACP wire
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        log.info("git unavailable: %s", exc)
        return None
    try:
        out, _ = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        log.info("git %s took over %s s in %s", args[0], GIT_TIMEOUT, cwd)
        return None
    return out.decode(errors="replace") if process.returncode == 0 else None
