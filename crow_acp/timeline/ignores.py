"""Which names of a directory a scan records: git's ignore rules, each directory's `.gitignore` applying below
it (pathspec's GitIgnoreSpec, git's own rules), and `.git` never. The decisions are cached per directory while
its mtime, inode, names and rules stay, so pathspec runs only where something changed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any

from pathspec import GitIgnoreSpec

SKIPPED = frozenset({".git"})
IGNORE_LIMIT = 1 << 20
"""A .gitignore larger than this is not read (a hostile repository's)."""


@dataclass
class Listing:
    signature: tuple[int, int]
    ignores: tuple[Any, ...]
    kept: dict[str, bool]
    """Every name the directory held, and whether the scan records it."""
    inherited: tuple[Any, ...] = ()
    """The rules from above (without this directory's own .gitignore): what listing it again starts from."""


@dataclass
class Rules:
    listings: dict[str, Listing] = field(default_factory=dict)
    _specs: dict[tuple[str, tuple[int, int, int]], GitIgnoreSpec] = field(default_factory=dict)

    def listing(self, root: str, rel: str) -> Listing | None:
        return self.listings.get(f"{root}\0{rel}")

    def kept(self, root: str, rel: str, st: os.stat_result, rules: tuple[tuple[Any, ...], tuple[Any, ...]],
             names: list[str], fd: int) -> dict[str, bool]:  # fmt: skip
        """Which of `names` the scan records; `rules` are (the rules here, those inherited from above)."""
        ignores, inherited = rules
        key, signature = f"{root}\0{rel}", (st.st_mtime_ns, st.st_ino)
        cached = self.listings.get(key)
        # The names too: two changes within one tick of a coarse mtime leave the signature as it was.
        if (
            cached is not None
            and cached.signature == signature
            and cached.ignores == ignores
            and list(cached.kept) == names
        ):
            cached.inherited = inherited
            return cached.kept
        kept = {}
        for name in names:
            if name in SKIPPED:
                kept[name] = False
                continue
            path = f"{rel}/{name}" if rel else name
            try:
                is_dir = stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
            except OSError:
                is_dir = False  # gone meanwhile: the scan skips it
            kept[name] = not _ignored(ignores, path + ("/" if is_dir else ""))
        self.listings[key] = Listing(signature, ignores, kept, inherited)
        return kept

    def spec(self, fd: int, root: str, rel: str, reread: bool) -> tuple[str, GitIgnoreSpec]:
        """The directory's .gitignore (`reread`: an event named it, so its stat is not trusted)."""
        try:
            opened = os.open(".gitignore", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        except OSError:
            return (rel, GitIgnoreSpec.from_lines([]))
        try:
            st = os.fstat(opened)
            key = (f"{root}\0{rel}", (st.st_mtime_ns, st.st_ino, st.st_size))
            if reread or (spec := self._specs.get(key)) is None:
                data = os.read(opened, IGNORE_LIMIT) if stat.S_ISREG(st.st_mode) else b""
                spec = self._specs[key] = GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())
            return (rel, spec)
        finally:
            os.close(opened)

    def drop(self, root: str, path: str) -> None:
        """The listings of `path` and below: the directory is gone."""
        one, below = f"{root}\0{path}", f"{root}\0{path}/"
        for key in [k for k in self.listings if k == one or k.startswith(below)]:
            del self.listings[key]


def _ignored(ignores: tuple[Any, ...], path: str) -> bool:
    """git's rule: the deepest .gitignore with a matching pattern decides (a `!pattern` re-includes)."""
    for base, spec in reversed(ignores):
        decided = spec.check_file(path[len(base) + 1 :] if base else path).include
        if decided is not None:
            return bool(decided)
    return False
