"""The workspace boundary: every path a tool touches lies inside the session's roots.

`resolve` is the lexical check (so `..` cannot climb out, and a call is refused before anyone is
asked to allow it). It is not what keeps a symlink from leading out: a check followed by a use
is a race. Files are opened only through `confined` (confined.py), which walks each path one
component at a time from a root's open directory.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ToolError

if TYPE_CHECKING:
    from .confined import Confined


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
        """The lexical absolute path, or ToolError when it lies outside every root."""
        lexical = self.lexical(path)
        if "\0" in lexical:
            raise ToolError(f"{path!r} contains a NUL character.")
        if not any(_within(lexical, root) for root in self.roots):
            raise ToolError(f"{path!r} is outside the workspace. Allowed roots: {', '.join(self.roots)}")
        return lexical

    @functools.cached_property
    def confined(self) -> Confined:
        """The only way tools open files: component by component from the roots, never following a
        symlink out of them."""
        from .confined import Confined

        return Confined(self.roots)

    def display(self, path: str) -> str:
        """How titles show a path: relative to the cwd when inside it, else absolute."""
        lexical = self.lexical(path)
        for root, real in zip(
            self.roots, self.confined.real_roots, strict=True
        ):  # a real path from the confined opener
            if real != root and _within(lexical, real) and not _within(lexical, root):
                lexical = os.path.join(root, os.path.relpath(lexical, real))
        return os.path.relpath(lexical, self.cwd) if _within(lexical, self.cwd) else lexical


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
