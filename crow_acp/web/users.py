"""Who is asking `crow serve`: the users of a `--users` file, or the one `default` user of a single token.

The file is TOML, one table per user, holding the SHA-256 of their token (never the token itself):

    [users.alice]
    token_sha256 = "…64 hex digits…"
    roots = ["/srv/checkouts/alice"]   # within the server's --root
    max_mode = "accept_edits"          # optional, within --max-mode
    admin = true                       # optional

A token is hashed and compared with every user's hash in constant time (hmac.compare_digest), so
neither the match nor its position shows in the answer's timing. The file is re-read when it changes
(its mtime, size or inode: `crow serve user` replaces it atomically) and on SIGHUP; a user removed or
changed (a new token, other roots) is in `reload()`'s answer, and their connections are ended. A file
that no longer parses keeps the users read before (the error is logged): a typo does not lock
everyone out; `crow serve user` always writes a valid file.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.tables import MODE_ORDER
from ..errors import ConfigError
from .bounds import ClientBounds

log = logging.getLogger(__name__)

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
DEFAULT = "default"
"""The one user of the single-token modes (CROW_SERVE_TOKEN, --token-file, a generated token)."""


class UsersError(ConfigError):
    """A users file that cannot be read or holds an invalid entry."""


@dataclass(frozen=True)
class User:
    name: str
    token_sha256: str | None
    """None only for --no-token (loopback): anyone is this user."""
    bounds: ClientBounds
    admin: bool = False


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def parse_users(text: str, server: ClientBounds, where: str) -> dict[str, User]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsersError(f"{where}: not valid TOML ({exc})") from None
    table = data.get("users", {})
    if not isinstance(table, dict):
        raise UsersError(f"{where}: [users] must be a table of users")
    return {name: _user(name, entry, server, where) for name, entry in table.items()}


def _user(name: str, entry: Any, server: ClientBounds, where: str) -> User:
    if not NAME.fullmatch(name):
        raise UsersError(f"{where}: user name {name!r} must be letters, digits, '_', '.', '-' (at most 64)")
    if not isinstance(entry, dict):
        raise UsersError(f"{where}: users.{name} must be a table")
    digest = entry.get("token_sha256")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise UsersError(f"{where}: users.{name}.token_sha256 must be 64 lower-case hex digits")
    roots = entry.get("roots")
    if not isinstance(roots, list) or not roots or not all(isinstance(r, str) and r.startswith("/") for r in roots):
        raise UsersError(f"{where}: users.{name}.roots must be a non-empty list of absolute paths")
    resolved = [os.path.realpath(r) for r in roots]
    for root, real in zip(roots, resolved, strict=True):
        if server.roots and not server.contains(real):
            raise UsersError(
                f"{where}: users.{name}.roots: {root} is outside the server's roots: {', '.join(server.roots)}"
            )
    mode = entry.get("max_mode", server.max_mode)
    if mode not in MODE_ORDER:
        raise UsersError(f"{where}: users.{name}.max_mode must be one of {', '.join(MODE_ORDER)}")
    if MODE_ORDER.index(mode) > MODE_ORDER.index(server.max_mode):
        raise UsersError(f"{where}: users.{name}.max_mode {mode} is above the server's --max-mode {server.max_mode}")
    admin = entry.get("admin", False)
    if not isinstance(admin, bool):
        raise UsersError(f"{where}: users.{name}.admin must be true or false")
    return User(name, digest, ClientBounds.of(resolved, mode, owner=name), admin)


class Users:
    """The users a server knows now; reloaded from their file when it changes."""

    def __init__(self, users: dict[str, User], path: Path | None = None, server: ClientBounds | None = None):
        self.users = users
        self.path = path
        self.server = server or ClientBounds()
        self._seen = _stamp(path) if path is not None else None

    @classmethod
    def single(cls, token: str | None, server: ClientBounds) -> Users:
        digest = token_sha256(token) if token is not None else None
        return cls({DEFAULT: User(DEFAULT, digest, server, admin=True)})

    @classmethod
    def load(cls, path: Path, server: ClientBounds) -> Users:
        return cls(parse_users(_read(path), server, str(path)), path, server)

    def authenticate(self, token: str | None) -> User | None:
        users = list(self.users.values())
        if len(users) == 1 and users[0].token_sha256 is None:
            return users[0]  # --no-token
        if token is None:
            return None
        digest = token_sha256(token).encode()
        found = None
        for user in users:  # every hash compared: the time does not tell which matched
            if user.token_sha256 is not None and hmac.compare_digest(digest, user.token_sha256.encode()):
                found = user
        return found

    def reload(self, force: bool = False) -> set[str]:
        """Re-read the file if it changed (or `force`): the names of users removed or changed."""
        if self.path is None:
            return set()
        stamp = _stamp(self.path)
        if stamp == self._seen and not force:
            return set()
        self._seen = stamp
        try:
            new = parse_users(_read(self.path), self.server, str(self.path))
        except UsersError as exc:
            log.error("users file not reloaded, the users read before stay: %s", exc)
            return set()
        gone = {name for name, user in self.users.items() if new.get(name) != user}
        self.users = new
        if gone:
            log.info("users removed or changed: %s", ", ".join(sorted(gone)))
        return gone


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsersError(f"--users {path}: cannot read it ({exc})") from None


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino
