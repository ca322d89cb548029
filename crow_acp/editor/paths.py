"""The workspace boundary: every path a tool touches resolves inside the session's roots.

A path is checked twice: lexically (so `..` cannot climb out) and after `Path.resolve()` (so a
symlink cannot lead out). The lexical form is what the editor gets, because Zed keys its buffers
by the path the user sees, not by the symlink target.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


class ToolError(Exception):
    """A tool failure the model should read and can act on (bad path, missing match, ...)."""


@dataclass(frozen=True)
class Workspace:
    cwd: str
    roots: tuple[str, ...]
    """Lexically normalized absolute roots: the cwd first, then the additional directories."""

    @classmethod
    def of(cls, cwd: str, additional: list[str] | tuple[str, ...] = ()) -> Workspace:
        base = os.path.normpath(os.path.abspath(cwd))
        extra = [os.path.normpath(os.path.join(base, d)) for d in additional]
        return cls(base, tuple(dict.fromkeys([base, *extra])))

    def lexical(self, path: str) -> str:
        """The absolute, `..`-free form of a path as given (relative ones start at the cwd)."""
        return os.path.normpath(os.path.join(self.cwd, os.path.expanduser(path or ".")))

    def resolve(self, path: str) -> str:
        """The absolute path to use, or ToolError when it points outside every root."""
        lexical = self.lexical(path)
        real = Path(lexical).resolve()
        inside = any(_within(lexical, root) for root in self.roots)
        if not inside or not any(real.is_relative_to(Path(root).resolve()) for root in self.roots):
            allowed = ", ".join(self.roots)
            via = "" if not inside else f" (it leads to {real} through a symbolic link)"
            raise ToolError(f"{path!r} is outside the workspace{via}. Allowed roots: {allowed}")
        return lexical

    def display(self, path: str) -> str:
        """How titles show a path: relative to the cwd when inside it, else absolute."""
        lexical = self.lexical(path)
        return os.path.relpath(lexical, self.cwd) if _within(lexical, self.cwd) else lexical

    def contains(self, path: str) -> bool:
        """Whether an existing file really lies inside a root (used to skip symlinks while walking)."""
        real = Path(path).resolve()
        return any(real.is_relative_to(Path(root).resolve()) for root in self.roots)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
