"""A timeline's change journal: inotify watches on the directories a scan walked, drained at each checkpoint.

The kernel queues an event before the writing syscall returns, so a non-blocking read of the queue when a
checkpoint starts sees every change made before it, by any process: crow's tools, a command in the sandbox
(its bind mounts share the inodes, and a watch is on the inode), the user's editor. The scan then lists
again only the directories that had events (tree.py); with no event, the last manifest stands.

It fails closed: whenever the journal cannot be trusted, `drain` answers None and the scan walks the whole
tree, as it does with no journal, then watches afresh. That is so after a queue overflow, a watch the kernel
dropped (IN_IGNORED we did not ask for, IN_UNMOUNT), a root deleted or moved, a directory reached twice (a
bind mount inside the roots), a failed scan. A journal is off for good (full walks only) when inotify cannot
be had (not Linux, max_user_instances, MAX_OPEN reached), a watch cannot be added (max_user_watches), or a
directory lies on a filesystem not in LOCAL (a network or FUSE one, whose changes may be made elsewhere).

A watch is added through /proc/self/fd/N, N the directory the walk opened with O_NOFOLLOW, before the walk
lists it: no path is resolved again, so no symlink in the tree is ever followed (IN_DONT_FOLLOW would
refuse the /proc link itself), and IN_ONLYDIR holds. The walk never enters `.git`, crow's home or an
ignored directory, so none is watched. One inotify instance per timeline (its wds are its own: no sharing
between sessions, whose roots may overlap), at most MAX_OPEN in a process; `close` releases it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

try:  # Linux only; elsewhere every checkpoint is a full walk
    from inotify_simple import INotify, flags
except (ImportError, OSError):  # pragma: no cover - not Linux
    INotify = None

LOCAL = {0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs", 0x794C7630: "overlay",
         0x2FC12FC1: "zfs", 0xF2F52010: "f2fs"}  # fmt: skip
"""statfs f_type of the filesystems whose every change passes through this kernel (read per directory with
fstatfs, not from /proc/self/mountinfo, whose device numbers miss btrfs subvolumes)."""
MAX_OPEN = 16
"""inotify instances in one process: max_user_instances is 128 per user, shared with the user's editors."""
_opened: weakref.WeakSet[Watch] = weakref.WeakSet()
"""The journals holding an instance (one dropped unclosed leaves it with its fd, which its FileIO closes)."""
_opened_lock = threading.Lock()
Key = tuple[str, str]
"""(root, relative path of a directory; "" the root)."""


@dataclass
class Changes:
    names: dict[Key, set[str]] = field(default_factory=dict)
    """Directories to list again, with the names events named there (their stat cache is not trusted)."""
    deep: set[Key] = field(default_factory=set)
    """Directories to walk whole: new, moved in, or with a changed .gitignore (ignore decisions below redone)."""

    def __bool__(self) -> bool:
        return bool(self.names or self.deep)


class Watch:
    def __init__(self) -> None:
        self.off = "" if sys.platform.startswith("linux") and INotify is not None else "no inotify here"
        """Why the journal is off for good ("" while it is not)."""
        self.live = False
        """The watches cover every directory of the last manifest: a drain is the whole truth."""
        self._ino: INotify | None = None
        self._wds: dict[int, Key] = {}
        self._by_dir: dict[Key, int] = {}
        self._gone: set[int] = set()
        """wds dropped on purpose (or deleted): their late events and IN_IGNORED mean nothing."""
        self._devs: dict[int, bool] = {}
        self._lock = threading.Lock()  # close() may come from another session's thread (the LRU)
        self.read: Callable[[], list] | None = None
        """What gives the events queued now, when not the instance itself (the seam a test adds an overflow by)."""

    def begin(self) -> None:
        """Before a full walk: a new instance, so the walk's `add`s are the only watches."""
        with self._lock:
            self.live = False
            self._release()
            if self.off:
                return
            with _opened_lock:
                if len(_opened) >= MAX_OPEN:
                    self.off = f"{MAX_OPEN} change journals open in this process"
                    return
                try:
                    self._ino = INotify(nonblocking=True)
                except OSError as exc:  # EMFILE: max_user_instances
                    self.off = f"no inotify instance: {exc}"
                    return
                _opened.add(self)

    def add(self, fd: int, root: str, rel: str) -> None:
        """Watch the directory open at `fd` (before it is listed: a change from now on is an event)."""
        with self._lock:
            if self._ino is None:
                return
            try:
                dev = os.fstat(fd).st_dev
                if dev not in self._devs:
                    self._devs[dev] = _local(fd)
                if not self._devs[dev]:
                    return self._stop(f"{root}/{rel} is not on a local filesystem")
                wd = self._ino.add_watch(f"/proc/self/fd/{fd}", MASK)
            except OSError as exc:  # ENOSPC: max_user_watches; no /proc
                return self._stop(f"a watch could not be added: {exc}")
            if self._wds.get(wd, (root, rel)) != (root, rel):
                return self._stop(f"{root}/{rel} is reached twice (a bind mount?)")
            if (before := self._by_dir.get((root, rel))) not in (None, wd):
                self._unwatch(before)  # another directory had this place: its events would name the new one
            self._gone.discard(wd)
            self._wds[wd], self._by_dir[(root, rel)] = (root, rel), wd

    def ready(self) -> None:
        """A full walk ended: from now on the drains tell what changed."""
        self.live = self._ino is not None

    def stale(self) -> None:
        """The scan failed midway: what it drained is lost, so the next one walks everything."""
        self.live = False

    def watching(self, root: str, rel: str) -> bool:
        return (root, rel) in self._by_dir

    def drain(self) -> Changes | None:
        """What changed since the last drain, or None: walk everything."""
        with self._lock:
            if not self.live or self._ino is None:
                return None
            changes = Changes()
            for event in (self.read or self._read)():
                if not self._note(event.wd, event.mask, event.name, changes):
                    self.live = False
                    return None
            return changes

    def forget(self, root: str, rel: str) -> None:
        """Drop the watches of `rel` and below ("" the whole root): about to be walked again."""
        with self._lock:
            self._unwatch_below(root, rel)

    def close(self) -> None:
        with self._lock:
            self.live = False
            self.off = self.off or "closed"
            self._release()

    def _note(self, wd: int, mask: int, name: str, changes: Changes) -> bool:
        """One event into `changes`; False when it says the journal cannot be trusted."""
        if mask & (flags.Q_OVERFLOW | flags.UNMOUNT):
            return False
        if wd in self._gone:
            return True
        if (key := self._wds.get(wd)) is None or mask & flags.IGNORED:
            return False  # a watch we never had, or one the kernel dropped
        root, rel = key
        if mask & (flags.DELETE_SELF | flags.MOVE_SELF):
            if not rel:
                return False  # a root went
            parent, _, base = rel.rpartition("/")
            changes.names.setdefault((root, parent), set()).add(base)
            self._unwatch(wd)
            return True
        changes.names.setdefault(key, set()).add(name)
        child = f"{rel}/{name}" if rel else name
        if name == ".gitignore":
            changes.deep.add(key)
        if mask & flags.ISDIR and mask & (flags.MOVED_FROM | flags.DELETE):
            self._unwatch_below(root, child)
        if mask & flags.ISDIR and mask & (flags.CREATE | flags.MOVED_TO):
            changes.deep.add((root, child))
        return True

    def _unwatch(self, wd: int) -> None:
        if (key := self._wds.pop(wd, None)) is not None:
            self._by_dir.pop(key, None)
        self._gone.add(wd)

    def _unwatch_below(self, root: str, rel: str) -> None:
        """A directory left its place: its watches (and those below) would name the old paths, so they go."""
        prefix = f"{rel}/" if rel else ""
        for key in [k for k in self._by_dir if k[0] == root and (k[1] == rel or k[1].startswith(prefix))]:
            wd = self._by_dir[key]
            self._unwatch(wd)
            if self._ino is not None:
                try:
                    self._ino.rm_watch(wd)
                except OSError:
                    pass  # already removed by the kernel

    def _stop(self, why: str) -> None:
        self.off, self.live = why, False
        self._release()

    def _release(self) -> None:
        self._wds.clear()
        self._by_dir.clear()
        self._gone.clear()
        if self._ino is not None:
            self._ino.close()
            self._ino = None
            with _opened_lock:
                _opened.discard(self)

    def _read(self) -> list:
        assert self._ino is not None
        return list(self._ino.read(timeout=0))


def _local(fd: int) -> bool:
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on x86_64; f_type comes first
    if _libc().fstatfs(fd, buf) != 0:
        return False
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF in LOCAL


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True))
    return _LIBC[0]


if INotify is not None:
    MASK = (flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE | flags.CREATE | flags.DELETE | flags.MOVED_FROM
            | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR)  # fmt: skip
    """What changes content, names or modes; not IN_ACCESS/IN_OPEN, which the scan's own reads would cause."""
