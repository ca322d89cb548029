"""Protected paths: writes that always ask, in every mode but full access, whatever was remembered.

A write into VCS internals (.git/, .hg/, .svn/, .jj/, .bzr/, and a `.git` file) can make git run
code the next time anyone runs it there (core.fsmonitor, hooks); so can the files of
`[permissions] protected` (direnv's .envrc, editor tasks, CI workflows). The VCS names are always
protected; the configured list replaces only the defaults below.

Patterns are fnmatch patterns, as the keys of [permissions.tools], matched case-insensitively
against every run of path components below a root: `.envrc` protects any `.envrc` in the tree,
`.github/workflows` everything below any such directory, `.env.*` any `.env.local`.
"""

from __future__ import annotations

import fnmatch
import os
import unicodedata
from dataclasses import dataclass

VCS_INTERNALS = (".git", ".hg", ".svn", ".jj", ".bzr")
DEFAULT_PROTECTED = [
    ".envrc",  # direnv runs it on cd
    ".env",  # secrets, and settings other tools load
    ".env.*",
    ".vscode",  # tasks.json, settings.json and launch.json run programs when the folder opens
    ".idea",  # run configurations
    ".devcontainer",  # its commands run when the container is built
    ".github/workflows",  # CI runs them with the repository's secrets
    ".gitlab-ci.yml",
    ".gitmodules",  # submodule URLs, paths and `update = !command`
    ".gitattributes",  # picks the filter, diff and merge drivers git runs
    ".pre-commit-config.yaml",  # hooks run on the next commit
    ".husky",  # hooks by core.hooksPath
]
MAX_COMPONENTS = 64
"""Path components compared; a deeper path is treated as protected (fail closed)."""


def folded(component: str) -> str:
    """A component as a case-insensitive file system sees it: case folded, format characters that
    HFS+ ignores (".g\u200cit") dropped, trailing dots and spaces that Windows drops removed."""
    text = unicodedata.normalize("NFC", component).casefold()
    return "".join(c for c in text if unicodedata.category(c) != "Cf").rstrip(". ")


def check_pattern(pattern: str) -> str:
    """A configured pattern, or ValueError saying why it cannot be one."""
    cleaned = pattern.strip().rstrip("/")
    if not cleaned or "\0" in cleaned:
        raise ValueError(f"protected pattern {pattern!r} is empty or holds a NUL")
    if cleaned.startswith("/") or ".." in cleaned.split("/"):
        raise ValueError(f"protected pattern {pattern!r} must be relative to the workspace roots, without `..`")
    return cleaned


@dataclass(frozen=True)
class ProtectedPaths:
    patterns: tuple[str, ...]

    @classmethod
    def of(cls, configured: list[str]) -> ProtectedPaths:
        return cls(tuple(dict.fromkeys([*VCS_INTERNALS, *(folded(check_pattern(p)) for p in configured)])))

    def match(self, path: str, roots: list[str]) -> str | None:
        """The protected part of an absolute path ("/w/.git/config" gives ".git/config"), or None."""
        parts = _below_root(os.path.normpath(path), roots)
        if len(parts) > MAX_COMPONENTS:
            return "/".join(parts[:3]) + "/…"
        keys = [folded(part) for part in parts]
        for start in range(len(keys)):
            for end in range(start + 1, len(keys) + 1):
                if any(fnmatch.fnmatchcase("/".join(keys[start:end]), p) for p in self.patterns):
                    return "/".join(parts)
        return None


def _below_root(path: str, roots: list[str]) -> list[str]:
    """Components of the path below the root it lies in (below / when it lies in none)."""
    for root in roots:
        root = os.path.normpath(root)
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return [p for p in path[len(root) :].split(os.sep) if p]
    return [p for p in path.split(os.sep) if p]
