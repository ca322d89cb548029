"""Content-addressed file contents of one session's checkpoints, under $CROW_HOME/checkpoints/<session>/packs/.

The contents a scan finds new are appended to one pack file (one file created per checkpoint, not one per
file: creating thousands of files is what a first checkpoint would otherwise cost), and the pack's index
(digest -> offset, length) is written beside it once the pack is complete, atomically. A pack without its
index (a kill mid-scan) is ignored, and its contents are stored again by the next scan. A content is read
back through the index and checked against its digest. A file is read through its directory's fd with
O_NOFOLLOW and checked to be the regular file the scan saw; one over `max_file_bytes`, or one that would
take the session's packs past `max_session_bytes`, or one that holds one of crow's keys (as the store never
does), is not kept: its entry says why, and a rewind lists it as "not restored".
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import uuid
from pathlib import Path
from typing import BinaryIO

from ..util.secrets import redact

TOO_LARGE = "larger than [checkpoints] max_file_bytes"
STORE_FULL = "the session's checkpoints reached [checkpoints] max_session_bytes"
UNREADABLE = "could not be read"
HOLDS_KEY = "holds one of crow's keys, which crow never stores"


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
        self.index: dict[str, tuple[str, int, int]] = {}
        """digest -> (pack name, offset, length), of every sealed pack."""
        self.used = 0
        for idx in directory.glob("*.idx"):
            self._read_index(idx)
        self._pack: BinaryIO | None = None
        self._pack_name = ""
        self._new: dict[str, tuple[int, int]] = {}
        self.keys: frozenset[str] = frozenset()
        """crow's key values (util/secrets.py), read again before each scan: a file holding one is not kept."""

    def keep(self, dir_fd: int, name: str, seen: os.stat_result) -> tuple[str | None, str]:
        """The file's digest once its content is stored (or already was), or (None, why it is not)."""
        if seen.st_size > self.max_file:
            return None, TOO_LARGE
        try:
            data = _read(dir_fd, name, seen, self.max_file)
        except OSError:
            return None, UNREADABLE
        if data is None:
            return None, TOO_LARGE
        if self.keys and redact(data.decode("latin-1"), self.keys) != data.decode("latin-1"):
            return None, HOLDS_KEY  # the store and the logs never hold the model keys; nor do the checkpoints
        digest = hashlib.sha256(data).hexdigest()
        if digest in self.index or digest in self._new:
            return digest, ""
        if self.used + len(data) > self.max_session:
            return None, STORE_FULL
        pack = self._open_pack()
        self._new[digest] = (pack.tell(), len(data))
        pack.write(data)
        self.used += len(data)
        return digest, ""

    def seal(self) -> None:
        """The pack of this scan complete: flushed, then its index written (what makes its contents exist)."""
        if self._pack is None:
            return
        self._pack.flush()
        os.fsync(self._pack.fileno())
        self._pack.close()
        rows = {digest: [offset, length] for digest, (offset, length) in self._new.items()}
        write_atomically(self.directory / f"{self._pack_name}.idx", json.dumps(rows).encode(), durable=True)
        for digest, (offset, length) in self._new.items():
            self.index[digest] = (self._pack_name, offset, length)
        self._pack, self._new = None, {}

    def read(self, digest: str) -> bytes:
        pack, offset, length = self.index[digest]
        with open(self.directory / f"{pack}.pack", "rb") as source:
            source.seek(offset)
            data = source.read(length)
        if hashlib.sha256(data).hexdigest() != digest:
            raise OSError(f"the checkpoint's copy of this file is damaged ({digest[:12]})")
        return data

    def _open_pack(self) -> BinaryIO:
        if self._pack is None:
            self._pack_name = uuid.uuid4().hex
            self._pack = open(self.directory / f"{self._pack_name}.pack", "xb")
        return self._pack

    def _read_index(self, idx: Path) -> None:
        try:
            rows = json.loads(idx.read_bytes())
        except (OSError, ValueError):
            return
        for digest, (offset, length) in rows.items():
            self.index[digest] = (idx.stem, int(offset), int(length))
            self.used += int(length)


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
