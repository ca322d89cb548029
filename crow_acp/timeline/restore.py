"""What differs between two manifests, and putting the files of one back.

Every path is reached from its root's fd one component at a time with O_NOFOLLOW|O_DIRECTORY, so a
symlink anywhere on the way (one swapped in since the scan) stops that path: it is left alone, and
nothing is ever written outside the roots. A file is written to a temporary name in its directory and
renamed over the old one; a link is recreated as a link. Each change is "make this path be that entry",
so applying the same list twice (a rewind finished after a kill) is harmless.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .tree import Entry, Manifest

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


@dataclass(frozen=True)
class Change:
    root: str
    path: str
    want: Entry | None
    """What the path must become; None: absent."""

    def to_json(self) -> list[object]:
        return [self.root, self.path, self.want.to_json() if self.want else None]

    @classmethod
    def from_json(cls, row: list[object]) -> Change:
        want = row[2]
        return cls(str(row[0]), str(row[1]), Entry.from_json(want) if isinstance(want, list) else None)


def differing(a: Manifest, b: Manifest) -> set[tuple[str, str]]:
    """(root, path) of every path whose content differs between two manifests."""
    out = set()
    for root in a.keys() | b.keys():
        left, right = a.get(root, {}), b.get(root, {})
        for path in left.keys() | right.keys():
            one, other = left.get(path), right.get(path)
            if one is None or not one.same(other):
                if not (one is None and other is None):
                    out.add((root, path))
    return out


def changes_to(target: Manifest, now: Manifest) -> list[Change]:
    """What makes `now` into `target`, in the order to apply it (see `ordered`)."""
    return ordered(Change(root, path, target.get(root, {}).get(path)) for root, path in differing(target, now))


def ordered(changes: Iterable[Change]) -> list[Change]:
    """Removals deepest first, then creations shallowest first (a directory before what it holds)."""
    items = list(changes)
    gone = sorted((c for c in items if c.want is None), key=lambda c: -c.path.count("/"))
    made = sorted((c for c in items if c.want is not None), key=lambda c: c.path.count("/"))
    return [*gone, *made]


def apply(changes: list[Change], read: Callable[[str], bytes]) -> list[tuple[Change, str]]:
    """Apply each change; the ones that could not be, with why (the rest are applied)."""
    failed = []
    for change in changes:
        try:
            _apply(change, read)
        except OSError as exc:
            failed.append((change, exc.strerror or str(exc)))
    return failed


def _apply(change: Change, read: Callable[[str], bytes]) -> None:
    *parents, name = change.path.split("/")
    fd = os.open(change.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parents:
            if change.want is None and not _exists(fd, part):
                return  # already gone with its directory
            if change.want is not None and not _exists(fd, part):
                os.mkdir(part, 0o755, dir_fd=fd)
            inner = os.open(part, DIR_FLAGS, dir_fd=fd)  # ELOOP/ENOTDIR on a link: left alone
            os.close(fd)
            fd = inner
        _put(fd, name, change.want, read)
    finally:
        os.close(fd)


def _exists(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _put(fd: int, name: str, want: Entry | None, read: Callable[[str], bytes]) -> None:
    try:
        there = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        there = None
    if want is None or (there is not None and stat.S_ISDIR(there.st_mode) != (want.kind == "d")):
        if there is not None:
            _remove(fd, name, there)
        if want is None:
            return
    if want.kind == "d":
        if there is None or not stat.S_ISDIR(there.st_mode):
            os.mkdir(name, stat.S_IMODE(want.mode) or 0o755, dir_fd=fd)
        return
    if want.digest is None and want.kind == "f":
        raise OSError(errno.EFBIG, want.note or "not kept")
    tmp = f".{name}.crow-rewind"
    if _exists(fd, tmp):
        os.unlink(tmp, dir_fd=fd)
    if want.kind == "l":
        os.symlink(want.target, tmp, dir_fd=fd)
    else:
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, stat.S_IMODE(want.mode), dir_fd=fd)
        try:
            data = memoryview(read(want.digest or ""))
            while data:
                data = data[os.write(out, data) :]
            os.fchmod(out, stat.S_IMODE(want.mode))
        finally:
            os.close(out)
    os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)


def _remove(fd: int, name: str, there: os.stat_result) -> None:
    if stat.S_ISDIR(there.st_mode):
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:  # one that still holds ignored files stays
                raise
            raise OSError(errno.ENOTEMPTY, "the directory still holds files crow does not track") from exc
    else:
        os.unlink(name, dir_fd=fd)
