"""Content-addressed blobs of one session's checkpoints: $CROW_HOME/checkpoints/<session>/objects/<sha256>.

A blob is written to a temporary name and renamed into place, so a kill leaves no half blob under a
digest. A file is read through its directory's fd with O_NOFOLLOW and checked to be the regular file
the scan saw; one over `max_file_bytes`, or one that would take the session's objects past
`max_session_bytes`, is not kept: its entry says why, and a rewind lists it as "not restored".
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

TOO_LARGE = "larger than [checkpoints] max_file_bytes"
STORE_FULL = "the session's checkpoints reached [checkpoints] max_session_bytes"
UNREADABLE = "could not be read"


def write_atomically(path: Path, data: bytes, *, durable: bool = False) -> None:
    """`data` at `path`, all or nothing: a temporary file beside it, renamed over it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as out:
        out.write(data)
        if durable:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)


class Objects:
    def __init__(self, directory: Path, max_file: int, max_session: int) -> None:
        self.directory = directory
        self.max_file, self.max_session = max_file, max_session
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.used = sum(entry.stat().st_size for entry in os.scandir(directory) if entry.is_file())

    def keep(self, dir_fd: int, name: str, seen: os.stat_result) -> tuple[str | None, str]:
        """The file's digest once its blob is stored, or (None, why it was not)."""
        if seen.st_size > self.max_file:
            return None, TOO_LARGE
        try:
            data = _read(dir_fd, name, seen, self.max_file)
        except OSError:
            return None, UNREADABLE
        if data is None:
            return None, TOO_LARGE
        digest = hashlib.sha256(data).hexdigest()
        blob = self.directory / digest
        if not blob.exists():
            if self.used + len(data) > self.max_session:
                return None, STORE_FULL
            write_atomically(blob, data)
            self.used += len(data)
        return digest, ""

    def read(self, digest: str) -> bytes:
        return (self.directory / digest).read_bytes()


def _read(dir_fd: int, name: str, seen: os.stat_result, most: int) -> bytes | None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_ino != seen.st_ino:
            raise OSError("not the file the scan saw")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > most:
                return None  # it grew past the limit while being read
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
