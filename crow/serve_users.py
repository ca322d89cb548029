"""`crow serve user add|list|remove` and `crow serve --users FILE`: the users of a team server.

`add` prints the new token once, on stdout, and stores only its SHA-256. The file is written as
crow writes its token files: a new file opened with O_EXCL|O_NOFOLLOW at mode 0600, renamed over the
old one (a rename replaces a symlink planted there, never the file it points to), under a lock so two
`add`s at once both land. A running server notices the new file by itself (crow_acp/web/users.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crow.exits import SETUP, Exit
from crow_acp.config.private import write_private

MODES = ["ask", "plan", "accept_edits", "auto", "full_access"]


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--users",
        metavar="FILE",
        help="a TOML file of users, each with their own token, roots and mode cap (see `crow serve user add`)",
    )
    serve.add_argument(
        "--metrics-token-file",
        metavar="PATH",
        help="file holding a token that may read /metrics (a Prometheus scraper's); an admin's token may too",
    )
    actions = serve.add_subparsers(dest="serve_action", metavar="user")
    user = actions.add_parser("user", help="add, list or remove the users of a --users file")
    verbs = user.add_subparsers(dest="user_action", metavar="ACTION", required=True)
    add = verbs.add_parser("add", help="add a user (or give them a new token); prints the token once")
    add.add_argument("name")
    add.add_argument("--root", action="append", required=True, metavar="DIR", help="a directory of theirs")
    add.add_argument("--max-mode", choices=MODES, help="their most permissive mode (within the server's)")
    add.add_argument("--admin", action="store_true", help="they may read GET /metrics")
    verbs.add_parser("list", help="the users, their roots and caps (never their tokens)")
    remove = verbs.add_parser("remove", help="remove a user: a running server ends their connections")
    remove.add_argument("name")
    for verb in verbs.choices.values():
        verb.add_argument("--users", dest="users_file", metavar="FILE", help="default: $CROW_HOME/serve-users.toml")


def user_command(args: argparse.Namespace) -> int:
    from crow_acp.config.settings import crow_home

    path = Path(args.users_file).expanduser() if args.users_file else crow_home() / "serve-users.toml"
    if args.user_action == "list":
        for name, entry in sorted(_entries(path).items()):
            extra = "".join(
                [
                    f" max_mode={entry['max_mode']}" if "max_mode" in entry else "",
                    " admin" if entry.get("admin") else "",
                ]
            )
            sys.stdout.write(f"{name}  roots={','.join(entry['roots'])}{extra}\n")
        return 0
    with _locked(path):
        entries = _entries(path)
        if args.user_action == "remove":
            if entries.pop(args.name, None) is None:
                raise Exit(SETUP, f"{path}: no user named {args.name}")
            _write(path, entries)
            sys.stderr.write(f"crow serve: user {args.name} removed\n")
            return 0
        token = secrets.token_urlsafe(32)
        entries[args.name] = _entry(args, token)
        _write(path, entries)
    sys.stderr.write(f"crow serve: user {args.name} added to {path}; their token, shown this once:\n")
    sys.stdout.write(token + "\n")
    return 0


def load_users(path_text: str, bounds: Any) -> Any:
    """The users `crow serve --users FILE` serves, or one line saying what is wrong with the file."""
    from crow_acp.web.users import Users, UsersError

    path = Path(path_text).expanduser()
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise Exit(SETUP, f"--users {path}: cannot read it ({exc.strerror})") from None
    if mode & 0o022:
        raise Exit(SETUP, f"--users {path}: others may write it (chmod go-w): they could add themselves")
    try:
        return Users.load(path, bounds)
    except UsersError as exc:
        raise Exit(SETUP, str(exc)) from None


def metrics_token(path: str | None) -> str | None:
    from crow_acp.util.secrets import protect_value
    from crow_acp.web.token import TokenError, read_token_file

    if path is None:
        return None
    try:
        token = read_token_file(path)
    except TokenError as exc:
        raise Exit(SETUP, str(exc).replace("--token-file", "--metrics-token-file")) from None
    protect_value(token)
    return token


def _entry(args: argparse.Namespace, token: str) -> dict[str, Any]:
    from crow_acp.web.users import NAME, token_sha256

    if not NAME.fullmatch(args.name):
        raise Exit(SETUP, f"user name {args.name!r}: letters, digits, '_', '.', '-' only (at most 64)")
    roots = []
    for root in args.root:
        real = os.path.realpath(os.path.expanduser(root))
        if not os.path.isdir(real):
            raise Exit(SETUP, f"--root {root}: not a directory")
        if not real.isprintable():
            raise Exit(SETUP, f"--root {root}: the path holds characters a users file cannot hold")
        roots.append(real)
    entry: dict[str, Any] = {"token_sha256": token_sha256(token), "roots": roots}
    if args.max_mode:
        entry["max_mode"] = args.max_mode
    if args.admin:
        entry["admin"] = True
    return entry


def _entries(path: Path) -> dict[str, dict[str, Any]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise Exit(SETUP, f"{path}: cannot read it ({exc.strerror}; a symlink is not followed)") from None
    with os.fdopen(fd, "rb") as file:
        try:
            data = tomllib.loads(file.read().decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise Exit(SETUP, f"{path}: not a valid users file ({exc})") from None
    users = data.get("users", {})
    if not isinstance(users, dict) or not all(isinstance(e, dict) and "roots" in e for e in users.values()):
        raise Exit(SETUP, f"{path}: not a valid users file ([users.NAME] tables with roots)")
    return users


def _render(entries: dict[str, dict[str, Any]]) -> str:
    lines = ["# crow serve --users: written by `crow serve user`; tokens are stored as their SHA-256 only", ""]
    for name, entry in entries.items():
        lines += [f"[users.{name}]", f"token_sha256 = {json.dumps(entry['token_sha256'])}"]
        lines.append(f"roots = [{', '.join(json.dumps(r) for r in entry['roots'])}]")
        if "max_mode" in entry:
            lines.append(f"max_mode = {json.dumps(entry['max_mode'])}")
        if entry.get("admin"):
            lines.append("admin = true")
        lines.append("")
    return "\n".join(lines)


def _write(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    write_private(path, _render(entries), durable=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = path.with_name(f".{path.name}.lock")
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
