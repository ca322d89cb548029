"""Files crow reads from the workspace by itself (AGENTS.md, CLAUDE.md, project skills), as read_file does.

The workspace is untrusted: `AGENTS.md -> ~/.aws/credentials` or `CLAUDE.md -> /proc/self/environ`
would put what they name into the system prompt, and a FIFO named AGENTS.md would hang the session.
So these files are opened through the confined walk (confined.py): inside the roots, regular files
only, never on /proc, /sys or /dev, and read up to a bound.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from .confined import Confined
from .paths import ToolError


@dataclass(frozen=True)
class Read:
    data: bytes
    real: str
    """The real path that was read (two names of one file read the same)."""
    size: int
    """The file's size in bytes; more than was read when it was over the bound."""

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class Refused(ToolError):
    """The file was not read: it leads out of the roots, is not a regular file, or cannot be opened."""


def read_confined(path: str, roots: Iterable[str], limit: int) -> Read:
    """Up to `limit` bytes of a regular file inside `roots` ("/" for anywhere but /proc, /sys and /dev).

    FileNotFoundError when there is no such file; Refused when there is one that is not read."""
    try:
        fd, real = Confined(tuple(os.path.normpath(root) for root in roots)).open_file(path)
    except FileNotFoundError:
        raise
    except (ToolError, OSError) as exc:
        raise Refused(str(exc)) from None
    try:
        size = os.fstat(fd).st_size
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise Refused(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return Read(data, real, max(size, len(data)))
