"""The bearer token `crow serve` requires: the operator's, or one crow generates into a private file.

As Jupyter does, a server started without a token makes one and writes it where only its user can
read it: a new file under $CROW_HOME, created with O_EXCL and O_NOFOLLOW at mode 0600, then renamed
over `serve-<port>.token` (a rename replaces a symlink planted there, never the file it points to).
A token is never taken on the command line, where every user on the machine can read it (ps).
"""

from __future__ import annotations

import secrets
from pathlib import Path

from ..config.private import private_dir, write_private
from ..errors import ConfigError


class TokenError(ConfigError):
    """No usable token: a token file that cannot be read, or is empty."""


def read_token_file(path: str) -> str:
    try:
        token = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenError(f"--token-file {path}: cannot read it ({exc})") from None
    if not token or any(c.isspace() for c in token):
        raise TokenError(f"--token-file {path}: it must hold one token (no spaces), and it is empty or holds more")
    return token


def new_token() -> str:
    return secrets.token_urlsafe(32)


def generate_token_file(home: Path, port: int) -> tuple[str, Path]:
    """A new token, written to $CROW_HOME/serve-<port>.token readable by this user only."""
    token = new_token()
    return token, write_token_file(home, port, token)


def write_token_file(home: Path, port: int, token: str) -> Path:
    """`token` into $CROW_HOME/serve-<port>.token, readable by this user only ($CROW_HOME private too)."""
    private_dir(home)
    final = home / f"serve-{port}.token"
    write_private(final, token + "\n")
    return final


def remove_token_file(path: Path, token: str) -> None:
    """At exit: the token file goes, unless another server has written its own there since."""
    try:
        if path.read_text(encoding="utf-8").strip() == token:
            path.unlink()
    except (OSError, UnicodeDecodeError):
        pass  # gone already, or not ours to read: nothing to remove
