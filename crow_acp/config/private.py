"""$CROW_HOME and what crow writes in it are its user's alone, whatever the umask.

The store holds every transcript and tool output, the logs much of them, the token files a server's
key: under the common umask 022 they would be readable by every local user. So $CROW_HOME and its
logs directory are created 0700 and the files 0600 (created so, not chmod-ed after a window). A
directory or file found looser is tightened, with one line on stderr (stdout may be the ACP wire).
"""

from __future__ import annotations

import logging.handlers
import os
import stat
import sys
from pathlib import Path
from typing import Any

_warned: set[str] = set()


def private_dir(path: Path) -> Path:
    """`path` as a directory only its owner can enter: created 0700, or tightened (with a warning)."""
    path = Path(path)
    try:
        os.mkdir(path, 0o700)
        return path
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
        return path
    except FileExistsError:
        pass
    _tighten(path, 0o700, "directory")
    return path


def private_file(path: Path) -> Path:
    """`path` as a file only its owner can read: created empty at 0600 if missing, else tightened. A
    symlink there is not followed (O_NOFOLLOW): the open fails, and the caller's own open reports it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return path  # a symlink, a directory, no permission: the store's or the log's own open says so
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            _warn(path, mode, 0o600, "file")
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def write_private(path: Path, text: str, *, durable: bool = False) -> None:
    """`text` at `path`, readable by its owner only, all or nothing: a new file beside it (O_EXCL, O_NOFOLLOW,
    0600 from the start) renamed over it, so a symlink there is replaced, never followed. `durable`: on disk
    before the rename (what was there survives a crash until the new one is whole)."""
    import secrets

    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)  # interrupted (Ctrl-C, a full disk): nothing half-written stays


def tighten_existing(path: Path) -> None:
    """A file that may exist (a database's -wal and -shm): 0600 if it does, else nothing."""
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return
    if mode & 0o077 and not os.path.islink(path):
        _warn(path, mode, 0o600, "file")
        os.chmod(path, 0o600)


def _tighten(path: Path, wanted: int, kind: str) -> None:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            _warn(path, mode, wanted, kind)
            os.chmod(path, wanted)
    except OSError as exc:  # not ours to change: it stays as it is, and the user is told
        sys.stderr.write(f"crow: warning: cannot make {path} private ({exc.strerror})\n")


def _warn(path: Path, mode: int, wanted: int, kind: str) -> None:
    if str(path) in _warned:
        return
    _warned.add(str(path))
    sys.stderr.write(f"crow: warning: {kind} {path} was open to other users (mode {mode:04o}); made it {wanted:04o}\n")
    sys.stderr.flush()


def _owner_only(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_CLOEXEC, 0o600)


class PrivateLog(logging.handlers.RotatingFileHandler):
    """crow.log (and each file it rotates to) created 0600, in a logs directory created 0700."""

    def __init__(self, log_dir: Path, *, max_bytes: int = 0, backups: int = 0) -> None:
        private_dir(log_dir.parent)  # $CROW_HOME, when the log is the first thing crow writes there
        private_dir(log_dir)
        private_file(log_dir / "crow.log")
        super().__init__(log_dir / "crow.log", maxBytes=max_bytes, backupCount=backups)

    def _open(self) -> Any:
        return open(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors, opener=_owner_only)
