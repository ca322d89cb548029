"""search_files' matching: each file read through the confined opener, its lines matched by RE2.

ripgrep only lists the candidate files (`rg --files`: .gitignore, globs, the size cap). Nothing
that opens files by name ever sees a listed path: crow opens each one again through the confined
opener, component by component with O_NOFOLLOW, so a file swapped for a symlink to outside after
the listing is refused, and one swapped for a link inside the roots is read there. The bytes are
matched by RE2, a linear-time engine (no pattern can hang it), in a worker thread that checks its
stop event between files.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .common import Stopped
from .confined import check_regular
from .paths import ToolError

MAX_FILE = 2 * 1024 * 1024
"""Bytes of one file that are searched; a larger file (also one grown since it was listed) is skipped."""
MAX_LINE = 300
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def compile_pattern(pattern: str, ignore_case: bool) -> Any:
    """A compiled RE2 regex over UTF-8 bytes, per line (never across a newline); an invalid (or too
    large) regex is searched for as literal text."""
    try:
        import re2  # lazily: only searches need it, never crow acp's start-up
    except ImportError:
        raise ToolError("search_files needs google-re2, which is not installed (pip install google-re2).") from None

    options = re2.Options()
    options.never_nl, options.case_sensitive, options.log_errors = True, not ignore_case, False
    raw = pattern.encode()  # a lone surrogate is a ValueError: the model is told its arguments are invalid
    try:
        return re2.compile(b"(?m)" + raw, options)  # ^ and $ at each line, as in ripgrep
    except re2.error:
        options.literal = True
        return re2.compile(raw, options)


def grep_files(
    confined: Any, cwd: str, names: list[bytes], regex: Any, limit: int, display: Callable[[str], str],
    deadline: float, stop: threading.Event,
) -> list[str]:  # fmt: skip
    """`path:line: text` for the matching lines of the named files (relative to cwd), at most limit."""
    found: list[str] = []
    with Opener(confined, cwd) as opener:
        for name in names:
            if stop.is_set():
                raise Stopped("The search was cancelled.")
            if time.monotonic() > deadline:
                break
            path = os.path.join(cwd, os.fsdecode(name))
            data = opener.read(name, path)
            if data is None:
                continue
            shown = display(path)
            for number, line in matching_lines(regex, data):
                text = line[: MAX_LINE * 4].decode(errors="replace").strip()[:MAX_LINE]
                found.append(f"{shown}:{number}: {text}")
                if len(found) >= limit:
                    return found
    return found


class Opener:
    """Listed files opened relative to the search's directory, which the confined opener opened.

    Each directory below it is opened with O_NOFOLLOW from its parent's fd, and the last one is kept
    (ripgrep lists a directory's files together), so a file costs one open. A symlink met on the
    way, swapped in since the listing, sends that file through the confined opener from a root,
    which follows it only inside the roots."""

    def __init__(self, confined: Any, cwd: str) -> None:
        self.confined = confined
        self.top, _ = confined.open_dir(cwd)
        self.dirs: list[bytes] | None = None
        self.fd = -1

    def __enter__(self) -> Opener:
        return self

    def __exit__(self, *_: object) -> None:
        self._close_dir()
        os.close(self.top)

    def _close_dir(self) -> None:
        if self.fd >= 0 and self.fd != self.top:
            os.close(self.fd)
        self.fd, self.dirs = -1, None

    def _dir(self, dirs: list[bytes]) -> int:
        if dirs != self.dirs:
            self._close_dir()
            fd = self.top
            try:
                for part in dirs:
                    below = os.open(part, _DIR, dir_fd=fd)
                    if fd != self.top:
                        os.close(fd)
                    fd = below
            except OSError:
                if fd != self.top:
                    os.close(fd)
                raise
            self.fd, self.dirs = fd, dirs
        return self.fd

    def read(self, name: bytes, path: str) -> bytes | None:
        """The file's bytes; None for a file to skip: gone, now outside the roots or special, larger
        than MAX_FILE, or binary (a NUL byte, as ripgrep decides)."""
        *dirs, last = [part for part in name.split(b"/") if part not in (b"", b".")] or [b""]
        try:
            fd = os.open(last, _FILE, dir_fd=self._dir(dirs))
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                return None  # removed since it was listed, unreadable, or a socket
            self._close_dir()
            fd = self._confined_fd(path)  # a symlink swapped in: walked again from a root
            if fd < 0:
                return None
        try:
            st = os.fstat(fd)
            check_regular(path, st)
            return _read(fd, st.st_size)
        except ToolError:
            return None  # a FIFO or device swapped in since the listing
        finally:
            os.close(fd)

    def _confined_fd(self, path: str) -> int:
        try:
            return int(self.confined.open_file(path)[0])
        except (ToolError, OSError):
            return -1  # outside the roots, special, or gone: never read through a path


def _read(fd: int, expected: int) -> bytes | None:
    """At most MAX_FILE + 1 bytes, asked for in pieces of the size fstat gave (a 2 MB buffer per small
    file would cost more than the search); a file that grew is read on up to the cap."""
    chunks, size = [], 0
    try:
        while size <= MAX_FILE and (chunk := os.read(fd, min(max(expected + 1 - size, 65536), MAX_FILE + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    data = b"".join(chunks)
    return None if size > MAX_FILE or b"\0" in data else data


def matching_lines(regex: Any, data: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of each line holding a match; one pass over the data."""
    pos, number, counted = 0, 1, 0
    while pos <= len(data) and (match := regex.search(data, pos)) is not None:
        start = match.start()
        line_start = data.rfind(b"\n", 0, start) + 1
        if line_start == len(data) and line_start > 0:
            return  # an empty match after the final newline: no line there
        line_end = data.find(b"\n", start)
        line_end = len(data) if line_end < 0 else line_end
        spans = match.end() > line_end  # never_nl forbids it; should RE2 allow it, search the line alone
        if not spans or regex.search(data, line_start, line_end) is not None:
            number += data.count(b"\n", counted, line_start)
            counted = line_start
            yield number, data[line_start:line_end]
        pos = line_end + 1
