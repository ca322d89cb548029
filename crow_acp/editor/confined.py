"""Opening paths inside the workspace without races: openat, one component at a time.

A path is never checked and then used. Each component is opened relative to the directory fd
opened before it, with O_NOFOLLOW, so a symlink swapped in after any check cannot lead out. A
symlink met on the way is followed only by walking its target again from a root, under the same
rules. Writes go to a temporary file created in the verified directory fd and renamed into place
relative to that same fd, so no file outside the roots is ever opened for writing.

Only regular files are read or written: FIFOs, devices and sockets are refused after an
O_NONBLOCK open (a FIFO would block the read forever), and so is anything on /proc, /sys or /dev.
A file with several hard links is read but never written (see refuse_hard_linked).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from dataclasses import dataclass

from ..errors import ToolError

MAX_HOPS = 40
"""Symlinks followed while opening one path (the kernel's own limit)."""

_NOFOLLOW = os.O_CLOEXEC | os.O_NOFOLLOW
_DIR = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
_SPECIAL = ("/proc", "/sys", "/dev")
_MOVED = "{path} changed while it was being written (a symbolic link appeared on the way); nothing was written."
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))  # fmt: skip


@dataclass
class Parent:
    """An open directory inside the roots and the last component of the path within it."""

    fd: int
    name: str
    """The last component; "" when the path is a root itself."""
    path: str
    """The real absolute path (no symlink left in it below the root)."""

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)


@functools.cache
def _special_devices() -> frozenset[int]:
    """The devices of /proc, /sys and /dev when they are mounts of their own (in a bare chroot /dev may
    be a plain directory of the root file system, whose device must not make every file special)."""
    root = os.stat("/").st_dev
    return frozenset(dev for p in _SPECIAL if os.path.isdir(p) and (dev := os.stat(p).st_dev) != root)


def _refuse_special(path: str, st: os.stat_result) -> None:
    if any(path == p or path.startswith(p + "/") for p in _SPECIAL) or st.st_dev in _special_devices():
        raise ToolError(f"{path} is on a special file system (/proc, /sys, /dev); crow does not read or write there.")


def check_regular(path: str, st: os.stat_result) -> None:
    """A ToolError unless st is a regular file outside the special file systems."""
    for test, kind in _KINDS:
        if test(st.st_mode):
            raise ToolError(f"{path} is {kind}, not a regular file.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{path} is not a regular file.")
    _refuse_special(path, st)


def refuse_hard_linked(path: str, st: os.stat_result) -> None:
    """Writes refuse a file with several hard links: its other names may lie outside the roots, and an
    editor writing in place (through ACP's fs) would change them all. Crow's own write would not (it
    renames a new file over the name), but it would quietly break the link; the user decides instead."""
    if st.st_nlink > 1:
        raise ToolError(
            f"{path} has {st.st_nlink} hard links; crow does not write a hard-linked file, whose other names may lie "
            "outside the workspace. To change only this name, give it its own copy first: "
            "cp FILE FILE.new && mv FILE.new FILE."
        )


class Confined:
    """The workspace roots as the only places files are opened from."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots
        self.real_roots = tuple(os.path.realpath(root) for root in roots)

    def _locate(self, path: str, linked_from: str | None) -> tuple[str, list[str]]:
        """(the real root, the components below it) of an absolute, normalized path."""
        for lexical, real in zip(self.roots, self.real_roots, strict=True):
            for root in (real, lexical):
                if path == root or path.startswith(root.rstrip("/") + "/"):
                    rest = path[len(root) :].strip("/")
                    return real, rest.split("/") if rest else []
        via = f"{linked_from} leads to {path} through a symbolic link: " if linked_from else f"{path} is "
        raise ToolError(f"{via}outside the workspace. Allowed roots: {', '.join(self.roots)}")

    def parent(
        self,
        path: str,
        *,
        create: bool = False,
        missing_ok: bool = False,
        linked_from: str | None = None,
        follow: bool = True,
    ) -> Parent:
        """The open directory holding path's last component; directories on the way may be created.

        With missing_ok, a missing directory on the way yields Parent(fd=-1) and the path as it
        would be (nothing below a missing directory can be a symlink). Without follow, a symlink on
        the way is an error: the caller gave a real path, so one appeared since it was resolved."""
        original = linked_from or path
        for _ in range(MAX_HOPS):
            root, parts = self._locate(os.path.normpath(path), linked_from)
            fd, here = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), root
            try:
                for index, part in enumerate(parts[:-1]):
                    next_fd = self._subdir(fd, part, create)
                    if isinstance(next_fd, str) and not follow:
                        raise ToolError(_MOVED.format(path=original))
                    if isinstance(next_fd, str):  # a symlink: walk its target from a root
                        path, linked_from = os.path.join(here, next_fd, *parts[index + 1 :]), original
                        break
                    if next_fd < 0:
                        if missing_ok:
                            return Parent(-1, parts[-1], os.path.join(here, *parts[index:]))
                        raise FileNotFoundError(errno.ENOENT, "No such file or directory", os.path.join(here, part))
                    os.close(fd)
                    fd, here = next_fd, os.path.join(here, part)
                else:
                    _refuse_special(here, os.fstat(fd))
                    parent, fd = Parent(fd, parts[-1] if parts else "", os.path.join(here, *parts[-1:])), -1
                    return parent
            finally:
                if fd >= 0:
                    os.close(fd)
        raise ToolError(f"{path}: too many levels of symbolic links.")

    @staticmethod
    def _subdir(fd: int, part: str, create: bool) -> int | str:
        """The directory's fd, a symlink's target, or -1 when it does not exist."""
        try:
            return os.open(part, _DIR, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                return -1
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            return _link_or_raise(fd, part, exc)
        try:
            os.mkdir(part, 0o777, dir_fd=fd)
        except FileExistsError:
            pass  # made meanwhile; opened below under the same rules
        return Confined._subdir(fd, part, False)

    def real_path(self, path: str) -> tuple[str, os.stat_result | None]:
        """The real path a path names (symlinks inside the roots followed), and its lstat if it exists."""
        original, linked_from = path, None
        for _ in range(MAX_HOPS):
            parent = self.parent(path, missing_ok=True, linked_from=linked_from)
            try:
                if parent.fd < 0:
                    return parent.path, None
                if not parent.name:
                    return parent.path, os.fstat(parent.fd)
                try:
                    st = os.stat(parent.name, dir_fd=parent.fd, follow_symlinks=False)
                except FileNotFoundError:
                    return parent.path, None
                if not stat.S_ISLNK(st.st_mode):
                    return parent.path, st
                path = os.path.join(os.path.dirname(parent.path), os.readlink(parent.name, dir_fd=parent.fd))
                linked_from = original
            finally:
                parent.close()
        raise ToolError(f"{path}: too many levels of symbolic links.")

    def writable(self, path: str) -> tuple[str, os.stat_result | None]:
        """The real path a write would replace, and its lstat if it exists: a regular file with one link."""
        real, st = self.real_path(path)
        if st is not None:
            check_regular(real, st)
            refuse_hard_linked(real, st)
        return real, st

    def open_file(self, path: str) -> tuple[int, str]:
        """A read-only fd of a regular file inside the roots, and its real path."""
        original, linked_from = path, None
        for _ in range(MAX_HOPS):
            parent = self.parent(path, linked_from=linked_from)
            try:
                if not parent.name:
                    raise ToolError(f"{parent.path} is a directory, not a regular file.")
                try:
                    fd = os.open(parent.name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=parent.fd)
                except OSError as exc:
                    if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket: say what it is
                        check_regular(parent.path, os.stat(parent.name, dir_fd=parent.fd, follow_symlinks=False))
                    if exc.errno != errno.ELOOP:
                        raise
                    target = _link_or_raise(parent.fd, parent.name, exc)
                    path, linked_from = os.path.join(os.path.dirname(parent.path), target), original
                    continue
            finally:
                parent.close()
            try:
                check_regular(parent.path, os.fstat(fd))
            except BaseException:  # not a catch: whatever ends this (a cancel too), the fd is closed, then re-raised
                os.close(fd)
                raise
            return fd, parent.path
        raise ToolError(f"{path}: too many levels of symbolic links.")

    def open_dir(self, path: str) -> tuple[int, str]:
        """A directory fd inside the roots, and its real path."""
        original, linked_from = path, None
        for _ in range(MAX_HOPS):
            parent = self.parent(path, linked_from=linked_from)
            try:
                if not parent.name:
                    return os.dup(parent.fd), parent.path
                found = self._subdir(parent.fd, parent.name, False)
                if isinstance(found, str):
                    path, linked_from = os.path.join(os.path.dirname(parent.path), found), original
                    continue
                if found < 0:
                    raise FileNotFoundError(errno.ENOENT, "No such file or directory", parent.path)
                return found, parent.path
            finally:
                parent.close()
        raise ToolError(f"{path}: too many levels of symbolic links.")

    def write(self, path: str, data: bytes, *, follow: bool = True) -> str:
        """Replace (or create) a regular file with data, atomically; returns its real path. Without
        follow, path is a real path (from writable) and no symlink may be met on the way to it."""
        original, linked_from = path, None
        for _ in range(MAX_HOPS):
            parent = self.parent(path, create=True, linked_from=linked_from, follow=follow)
            try:
                if not parent.name:
                    raise ToolError(f"{parent.path} is a directory.")
                try:
                    st = os.stat(parent.name, dir_fd=parent.fd, follow_symlinks=False)
                except FileNotFoundError:
                    st = None
                if st is not None and stat.S_ISLNK(st.st_mode) and not follow:
                    raise ToolError(_MOVED.format(path=original))
                if st is not None and stat.S_ISLNK(st.st_mode):
                    path = os.path.join(os.path.dirname(parent.path), os.readlink(parent.name, dir_fd=parent.fd))
                    linked_from = original
                    continue
                if st is not None:
                    check_regular(parent.path, st)
                    refuse_hard_linked(parent.path, st)
                _replace(parent, data, stat.S_IMODE(st.st_mode) if st else None)
                return parent.path
            finally:
                parent.close()
        raise ToolError(f"{path}: too many levels of symbolic links.")


def _replace(parent: Parent, data: bytes, mode: int | None) -> None:
    """Write a temporary file in the directory fd and rename it over the name (never following it)."""
    temp = f".crow-{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666, dir_fd=parent.fd)
    try:
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
        if mode is not None:
            os.fchmod(fd, mode)
        os.rename(temp, parent.name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
    except BaseException:  # not a catch: whatever ends the write (a cancel too), the temp file goes, then re-raised
        try:
            os.unlink(temp, dir_fd=parent.fd)
        except FileNotFoundError:
            pass
        raise
    finally:
        os.close(fd)


def _link_or_raise(fd: int, name: str, exc: OSError) -> str:
    """The target of a symlink that made an O_NOFOLLOW open fail; the failure itself otherwise."""
    try:
        return os.readlink(name, dir_fd=fd)
    except OSError:
        raise exc from None
