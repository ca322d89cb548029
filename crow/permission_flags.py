"""`--mode`, `--allow PATTERN` and `--deny PATTERN`: one run's permissions, never written to config.toml.

Patterns are [permissions.tools] keys: a tool name or an fnmatch pattern of names (`run_command`,
`time__*`). They act on this process's configuration only (PermissionConfig.run_allow, run_deny):
`--deny` beats every rule, `--allow` beats ask rules and the default but never a config rule that
denies (crow_acp/policy/permissions.py `policy_for`). The mode is the session's, set for the run
and put back when it ends (crow/run/session.py). `crow run` and the interactive chat share these.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any

from crow.exits import USAGE, Exit

MODES = ("ask", "accept_edits", "plan", "auto", "full_access")
TOOL_PATTERN = re.compile(r"[A-Za-z0-9_.*?!\[\]-]{1,128}")
"""What a tool name holds (letters, digits, `_`, `-`, `.`), with fnmatch's `*`, `?` and `[...]`."""


@dataclass(frozen=True)
class PermissionFlags:
    mode: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


def add_permission_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", metavar="MODE", help=f"the session's permission mode for this run: {'|'.join(MODES)}")
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="PATTERN",
        help="allow tools matching this name pattern without asking, for this run (repeatable; a config deny holds)",
    )
    parser.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="PATTERN",
        help="refuse tools matching this name pattern, for this run (repeatable; beats every allow)",
    )


def permission_flags(args: argparse.Namespace) -> PermissionFlags:
    """The flags, checked: a mistake is one `crow:` line with status 2."""
    if args.mode is not None and args.mode not in MODES:
        from crow_acp.config.errors import closest

        near = closest(args.mode, list(MODES))
        hint = f"; did you mean {near!r}?" if near else ""
        raise Exit(USAGE, f"--mode {args.mode!r} is not a mode: use one of {', '.join(MODES)}{hint}")
    for flag, patterns in (("allow", args.allow), ("deny", args.deny)):
        for pattern in patterns:
            _check_pattern(flag, pattern)
    return PermissionFlags(args.mode, tuple(args.allow), tuple(args.deny))


def _check_pattern(flag: str, pattern: str) -> None:
    if not TOOL_PATTERN.fullmatch(pattern):
        raise Exit(
            USAGE,
            f"--{flag} {pattern!r}: a pattern is a tool name or an fnmatch pattern of tool names "
            "(letters, digits, _ - . and * ? [ ]), as a [permissions.tools] key; `crow check` lists the tools",
        )


def with_rules(config: Any, flags: PermissionFlags) -> Any:
    """A copy of the configuration with the run's --allow and --deny patterns; the original is untouched."""
    if not flags.allow and not flags.deny:
        return config
    permissions = config.permissions.model_copy(update={"run_allow": list(flags.allow), "run_deny": list(flags.deny)})
    return config.model_copy(update={"permissions": permissions})
