"""A workspace as a manifest: every file, link and directory under the roots, by root and relative path.

The walk opens every directory relative to its parent's fd with O_NOFOLLOW, so a symlink is recorded as
a link (its target, as text) and never followed; `.git`, ignored directories (ignores.py) and crow's own
home are never entered. A stat cache makes a walk of an unchanged tree cost only stats: a file whose size,
mtime_ns, inode and mode match the previous manifest keeps its digest unread. With a change journal
(watch.py), only the first scan walks: a later one lists again only the directories that had events (a new
or moved-in directory, or one whose .gitignore changed, whole), and reuses the previous manifest when there
were none; it walks everything whenever the journal answers that it cannot be trusted.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CheckpointError
from .ignores import Rules
from .watch import Changes, Key, Watch

Manifest = dict[str, dict[str, "Entry"]]
"""Root path -> relative path ("a/b.txt") -> Entry."""
Keep = Callable[[int, str, os.stat_result], tuple[str | None, str]]
"""Reads a regular file (dir fd, name, its lstat) into the object store: (digest or None, why not)."""


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
class Scanner:
    """Scans the roots again and again, remembering what it needs to make the next scan cheap."""

    roots: list[str]
    keep: Keep
    skip_dirs: set[tuple[int, int]] = field(default_factory=set)
    """(st_dev, st_ino) of directories never entered (crow's home, when it lies inside a root)."""
    max_files: int = 20_000
    watch: Watch | None = None
    """The change journal (watch.py): with it, a scan after the first lists only what had events."""
    rules: Rules = field(default_factory=Rules)
    _linked: set[Key] = field(default_factory=set)
    """Directories holding a file with other hard links: a write through a link elsewhere is no event here,
    so they are listed again at every scan."""
    _walked: set[Key] = field(default_factory=set)
    """Directories walked whole during this scan (what they hold needs no listing again)."""
    misses: int = 0
    count: int = 0

    def scan(self, previous: Manifest | None) -> Manifest:
        """The roots now; entries equal to `previous`'s are reused (a hit), others read. `misses` counts the others."""
        changes = self.watch.drain() if self.watch is not None and previous is not None else None
        if previous is None or changes is None or set(previous) != set(self.roots):
            return self._full(previous)
        if not changes and not self._linked:
            self.misses = 0
            return previous  # nothing happened under the roots: not even a stat
        try:
            return self._since(previous, changes)
        except BaseException:
            self.watch.stale()  # type: ignore[union-attr]  # what it drained is lost: the next scan walks all
            raise

    def _full(self, previous: Manifest | None) -> Manifest:
        self.misses, self.count = 0, 0
        if self.watch is not None:
            self.watch.begin()
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
        if self.watch is not None:
            self.watch.ready()
        return out

    def _since(self, previous: Manifest, changes: Changes) -> Manifest:
        """`previous` with the directories that had events listed again (shallowest first)."""
        self.misses, self.count, self._walked = 0, 0, set()
        out = {root: dict(entries) for root, entries in previous.items()}
        todo = {key: False for key in (*changes.names, *self._linked)} | dict.fromkeys(changes.deep, True)
        for (root, rel), deep in sorted(todo.items(), key=lambda item: (item[0][0], item[0][1].count("/"), item[0][1])):
            if not self._covered(root, rel) and (record := self.rules.listing(root, rel)) is not None:
                self._again(root, rel, record.inherited, deep, changes.names.get((root, rel), set()), out[root])
        if sum(map(len, out.values())) > self.max_files:
            raise TooManyFiles(self.max_files)
        return out

    def _covered(self, root: str, rel: str) -> bool:
        parts = rel.split("/") if rel else []
        return any((root, "/".join(parts[:n])) in self._walked for n in range(len(parts) + 1))

    def _again(self, root: str, rel: str, inherited: tuple[Any, ...], deep: bool, fresh: set[str],
               out: dict[str, Entry]) -> None:  # fmt: skip
        fd = _open_below(root, rel)
        if fd is None:  # gone (its parent's listing, done first, drops its entries)
            return
        try:
            if deep:
                self._walked.add((root, rel))
                self.watch.forget(root, rel)  # type: ignore[union-attr]  # the walk watches what it enters
            self._walk(fd, root, rel, inherited, out, out, shallow=not deep, fresh=fresh)
        finally:
            os.close(fd)

    def _walk(self, fd: int, root: str, rel: str, ignores: tuple[Any, ...], out: dict[str, Entry], prev: dict,
              shallow: bool = False, fresh: set[str] | frozenset[str] = frozenset()) -> None:  # fmt: skip
        dir_stat = os.fstat(fd)
        if (dir_stat.st_dev, dir_stat.st_ino) in self.skip_dirs:
            return
        if self.watch is not None:
            self.watch.add(fd, root, rel)  # before the listing: a change from now on is an event
        names = sorted(os.listdir(fd))
        inherited = ignores
        if ".gitignore" in names:
            ignores = (*ignores, self.rules.spec(fd, root, rel, ".gitignore" in fresh))
        before = self.rules.listing(root, rel)
        kept = self.rules.kept(root, rel, dir_stat, (ignores, inherited), names, fd)
        self._linked.discard((root, rel))
        prefix = f"{rel}/" if rel else ""
        seen = set()
        for name in names:
            if not kept[name]:
                continue
            path = prefix + name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            seen.add(name)
            old = prev.get(path)
            if st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
                self._linked.add((root, rel))
            if old is not None and old.kind == "d" and not stat.S_ISDIR(st.st_mode):
                self._drop(root, path, out)
            if (
                old is not None
                and old.kind != "d"
                and old.mtime_ns == st.st_mtime_ns
                and old.size == st.st_size
                and old.ino == st.st_ino
                and old.mode == st.st_mode
                and name not in fresh
            ) or (shallow and old is not None and old.kind == "d" and self._watched(root, path, st)):
                out[path] = old  # the stat cache (or a watched directory, whose own events say what changed)
                self.count += 1
                continue
            self._one(fd, root, path, name, st, ignores, out, prev)
        if before is not None and out is prev:
            for name in [n for n, k in before.kept.items() if k and n not in seen]:
                self._drop(root, prefix + name, out)
        if self.count > self.max_files:
            raise TooManyFiles(self.max_files)

    def _watched(self, root: str, path: str, st: os.stat_result) -> bool:
        return stat.S_ISDIR(st.st_mode) and self.watch is not None and self.watch.watching(root, path)

    def _drop(self, root: str, path: str, out: dict[str, Entry]) -> None:
        """A path gone (or no longer a directory): its entry and everything below it."""
        if out.pop(path, None) is None:
            return
        self.misses += 1
        below = f"{path}/"
        for key in [k for k in out if k.startswith(below)]:
            del out[key]
        self.rules.drop(root, path)
        if self.watch is not None:
            self.watch.forget(root, path)

    def _one(self, fd: int, root: str, path: str, name: str, st: os.stat_result, ignores: tuple[Any, ...],
             out: dict[str, Entry], prev: dict) -> None:  # fmt: skip
        old = prev.get(path)
        if stat.S_ISDIR(st.st_mode):
            out[path] = old if old is not None and old.kind == "d" else Entry("d", mode=st.st_mode)
            self._walked.add((root, path))
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


def _open_below(root: str, rel: str) -> int | None:
    """The directory at `rel`, reached one component at a time with O_NOFOLLOW (None: not a directory now)."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    for part in rel.split("/") if rel else []:
        try:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            child = None
        os.close(fd)
        if child is None:
            return None
        fd = child
    return fd


class TooManyFiles(CheckpointError):
    def __init__(self, most: int) -> None:
        super().__init__(f"more than {most} files under the roots ([checkpoints] max_files)")
