"""A workspace as a manifest: every file, link and directory under the roots, by root and relative path.

The walk opens every directory relative to its parent's fd with O_NOFOLLOW, so a symlink is recorded as
a link (its target, as text) and never followed; `.git` and crow's own home are never entered. Each
directory's `.gitignore` applies below it (pathspec's GitIgnoreSpec, git's own rules). A stat cache
makes an unchanged tree cost only stats: a file whose size, mtime_ns, inode and mode match the previous
manifest keeps its digest unread, and a directory whose mtime and inode match keeps its ignore
decisions, so pathspec runs only where something changed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pathspec import GitIgnoreSpec

from ..errors import CheckpointError

Manifest = dict[str, dict[str, "Entry"]]
"""Root path -> relative path ("a/b.txt") -> Entry."""
Keep = Callable[[int, str, os.stat_result], tuple[str | None, str]]
"""Reads a regular file (dir fd, name, its lstat) into the object store: (digest or None, why not)."""
SKIPPED = frozenset({".git"})
IGNORE_LIMIT = 1 << 20
"""A .gitignore larger than this is not read (a hostile repository's)."""


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str
    """"f" a regular file, "l" a symlink, "d" a directory."""
    size: int = 0
    mtime_ns: int = 0
    ino: int = 0
    mode: int = 0
    digest: str | None = None
    """A file's sha256 in the object store; None when it was not kept (`note` says why)."""
    target: str = ""
    """A link's target, as the link holds it."""
    note: str = ""

    def same(self, other: Entry | None) -> bool:
        """Same content: what a restore would change (a file's kept digest, a link's target, the x bit)."""
        if other is None or other.kind != self.kind:
            return False
        if self.kind == "f":
            return self.digest == other.digest and self.digest is not None and _x(self.mode) == _x(other.mode)
        return self.target == other.target

    def to_json(self) -> list[Any]:
        return [self.kind, self.size, self.mtime_ns, self.ino, self.mode, self.digest, self.target, self.note]

    @classmethod
    def from_json(cls, row: list[Any]) -> Entry:
        return cls(*row)


def _x(mode: int) -> int:
    return mode & 0o111


@dataclass
class _Dir:
    signature: tuple[int, int]
    ignores: tuple[Any, ...]
    kept: dict[str, bool]


@dataclass
class Scanner:
    """Scans the roots again and again, remembering what it needs to make the next scan cheap."""

    roots: list[str]
    keep: Keep
    skip_dirs: set[tuple[int, int]] = field(default_factory=set)
    """(st_dev, st_ino) of directories never entered (crow's home, when it lies inside a root)."""
    max_files: int = 20_000
    _dirs: dict[str, _Dir] = field(default_factory=dict)
    _specs: dict[tuple[str, tuple[int, int, int]], GitIgnoreSpec] = field(default_factory=dict)
    misses: int = 0
    count: int = 0

    def scan(self, previous: Manifest | None) -> Manifest:
        """The roots now; entries equal to `previous`'s are reused (a hit), others read. `misses` counts the others."""
        self.misses, self.count = 0, 0
        out: Manifest = {}
        for root in self.roots:
            entries: dict[str, Entry] = {}
            try:
                fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                out[root] = entries
                continue
            try:
                self._walk(fd, root, "", (), entries, (previous or {}).get(root, {}))
            finally:
                os.close(fd)
            out[root] = entries
        if previous is not None and sum(map(len, previous.values())) != self.count:
            self.misses += 1  # something was removed
        return out

    def _walk(self, fd: int, root: str, rel: str, ignores: tuple[Any, ...], out: dict[str, Entry], prev: dict) -> None:
        dir_stat = os.fstat(fd)
        if (dir_stat.st_dev, dir_stat.st_ino) in self.skip_dirs:
            return
        names = sorted(os.listdir(fd))
        if ".gitignore" in names:
            ignores = (*ignores, self._spec(fd, root, rel))
        kept = self._kept(root, rel, dir_stat, ignores, names, fd)
        prefix = f"{rel}/" if rel else ""
        for name in names:
            if not kept[name]:
                continue
            path = prefix + name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            old = prev.get(path)
            if (
                old is not None
                and old.kind != "d"
                and old.mtime_ns == st.st_mtime_ns
                and old.size == st.st_size
                and old.ino == st.st_ino
                and old.mode == st.st_mode
            ):  # the stat cache: unchanged, not read again
                out[path] = old
                self.count += 1
                continue
            self._one(fd, root, path, name, st, ignores, out, prev)
        if self.count > self.max_files:
            raise TooManyFiles(self.max_files)

    def _one(self, fd: int, root: str, path: str, name: str, st: os.stat_result, ignores: tuple[Any, ...],
             out: dict[str, Entry], prev: dict) -> None:  # fmt: skip
        old = prev.get(path)
        if stat.S_ISDIR(st.st_mode):
            out[path] = old if old is not None and old.kind == "d" else Entry("d", mode=st.st_mode)
            self.count += 1
            self.misses += old is None or old.kind != "d"
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                return
            try:
                self._walk(child, root, path, ignores, out, prev)
            finally:
                os.close(child)
            return
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            return  # fifos, sockets, devices: nothing a rewind puts back
        self.count += 1
        self.misses += 1
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(name, dir_fd=fd)
            out[path] = Entry("l", st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, target=target)
            return
        digest, note = self.keep(fd, name, st)
        out[path] = Entry("f", st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, digest, note=note)

    def _kept(self, root: str, rel: str, st: os.stat_result, ignores: tuple[Any, ...], names: list[str],
              fd: int) -> dict[str, bool]:  # fmt: skip
        """Which names of this directory the scan records; cached while the directory and its rules stay."""
        key, signature = f"{root}\0{rel}", (st.st_mtime_ns, st.st_ino)
        cached = self._dirs.get(key)
        if cached is not None and cached.signature == signature and cached.ignores == ignores:
            return cached.kept
        kept = {}
        for name in names:
            if name in SKIPPED:
                kept[name] = False
                continue
            path = f"{rel}/{name}" if rel else name
            is_dir = stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
            kept[name] = not _ignored(ignores, path + ("/" if is_dir else ""))
        self._dirs[key] = _Dir(signature, ignores, kept)
        return kept

    def _spec(self, fd: int, root: str, rel: str) -> tuple[str, GitIgnoreSpec]:
        try:
            opened = os.open(".gitignore", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        except OSError:
            return (rel, GitIgnoreSpec.from_lines([]))
        try:
            st = os.fstat(opened)
            key = (f"{root}\0{rel}", (st.st_mtime_ns, st.st_ino, st.st_size))
            if (spec := self._specs.get(key)) is None:
                data = os.read(opened, IGNORE_LIMIT) if stat.S_ISREG(st.st_mode) else b""
                spec = self._specs[key] = GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())
            return (rel, spec)
        finally:
            os.close(opened)


def _ignored(ignores: tuple[Any, ...], path: str) -> bool:
    """git's rule: the deepest .gitignore with a matching pattern decides (a `!pattern` re-includes)."""
    for base, spec in reversed(ignores):
        decided = spec.check_file(path[len(base) + 1 :] if base else path).include
        if decided is not None:
            return bool(decided)
    return False


class TooManyFiles(CheckpointError):
    def __init__(self, most: int) -> None:
        super().__init__(f"more than {most} files under the roots ([checkpoints] max_files)")
