"""The sandboxed command line crow sends to the editor's `terminal/create`, and what its failure means.

The editor runs it on its own machine, which need not be crow's (`crow serve` over the network), so
nothing in it may depend on crow's file system: no descriptors, no paths checked here. A short POSIX
sh prelude runs first on the editor's machine and turns crow's markers into bwrap mounts for what
exists there:

    --crow-bind PATH      the path writable, if it is a directory there (the session's roots, `writable`)
    --crow-pin PATH       bound onto itself, if it lies below a --crow-bind path: a directory on the way
                          to a hidden store, which then cannot be renamed (sandbox.py pins)
    --crow-root PATH      a root shown again read-only over the private /tmp and $HOME (then maybe --crow-bind)
    --crow-ro-bind PATH   shown again read-only over the private $HOME, if it exists (the toolchains)
    --crow-ro-home PATH   the private $HOME made read-only, unless it is (in) a root
    --crow-hide PATH      an empty tmpfs over a directory, /dev/null over a file; nothing if absent (or /)
    --crow-protect PATH   bound read-only at its real place, if it exists (a protected path in a root)
    --crow-absent PATH    if it does not exist: removed after the command if the command made it (then the
                          prelude does not exec bwrap but waits for it, and says what it removed)
    --crow-resolv PATH    shown again read-only, if its real place is below /run (systemd-resolved)
    --crow-keep NAME      --setenv NAME VALUE if the editor's environment sets it (bwrap --clearenv first)
    --crow-seccomp M:F    the seccomp filter F (printf %b) on fd 9 and `--seccomp 9`, if `uname -m` is M

`~` and `~/...` expand to the editor's $HOME, so its own ~/.ssh is hidden. The prelude stops
rewriting at bwrap's `--`: the command after it is passed as one argument, never read by the
prelude. Then it execs bwrap with the same options and limits as a local command (sandbox.py).

If bwrap is missing there (the prelude says so, status 125) or cannot create its namespaces (bwrap
says `bwrap: ...`, status 1, before the command starts), the call fails visibly in the terminal and
the editor's sandbox counts as unavailable for that client's sessions: Auto and Plan then ask.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

from ..api import Sandbox
from ..util.environment import core_names
from .sandbox import NAMESPACE_FIX, SECRET_STORES, closing, namespaces, outermost, pins
from .sandbox_fs import PRIVATE_RUNTIME, TOOLCHAIN, candidates
from .seccomp import AUDIT_ARCH, escaped

QUIET = {"PAGER": "cat", "GIT_PAGER": "cat"}
"""Editor terminals are ptys: without these `git log` would wait in a pager (terminal.py QUIET_ENV)."""

PRELUDE = r"""[ -n "$HOME" ] || { echo "crow: HOME is not set, so the sandbox cannot hide its secrets" >&2; exit 125; }
command -v "$1" >/dev/null 2>&1 || { echo "crow: bubblewrap (bwrap) is not installed on this machine" >&2; exit 125; }
set -f
mark= tail= bound= shown= absent= nl='
'
inside() {
  IFS=$nl
  for b in $bound; do case $1 in "$b"/*) unset IFS; return 0;; esac; done
  unset IFS; return 1
}
covered() {
  IFS=$nl
  for b in $bound$nl$shown; do case $1 in "$b"|"$b"/*) unset IFS; return 0;; esac; done
  unset IFS; return 1
}
for arg do
  shift
  if [ -n "$tail" ]; then set -- "$@" "$arg"; continue; fi
  if [ -n "$mark" ]; then
    case $arg in "~") arg=$HOME;; "~/"*) arg=$HOME/${arg#"~/"};; esac
    case $mark in
      bind) if [ -d "$arg" ]; then set -- "$@" --bind "$arg" "$arg"; bound=$bound$nl$arg; fi;;
      pin) if [ -d "$arg" ] && [ ! -L "$arg" ] && inside "$arg"; then set -- "$@" --bind "$arg" "$arg"; fi;;
      root) if [ -d "$arg" ]; then set -- "$@" --ro-bind "$arg" "$arg"; shown=$shown$nl$arg; fi;;
      ro-bind) if [ -e "$arg" ]; then set -- "$@" --ro-bind "$arg" "$arg"; fi;;
      hide) [ -L "$arg" ] && arg=$(readlink -f -- "$arg")
            if [ "$arg" = / ]; then :; elif [ -d "$arg" ]; then set -- "$@" --tmpfs "$arg"
            elif [ -e "$arg" ]; then set -- "$@" --ro-bind /dev/null "$arg"; fi;;
      ro-home) if [ "$arg" != / ] && [ -d "$arg" ] && ! covered "$arg"; then set -- "$@" --remount-ro "$arg"; fi;;
      protect) if [ -e "$arg" ]; then r=$(readlink -f -- "$arg") && set -- "$@" --ro-bind "$r" "$r"; fi;;
      absent) if [ ! -e "$arg" ] && [ ! -L "$arg" ]; then absent=$absent$nl$arg; fi;;
      resolv) r=$(readlink -f -- "$arg")
        case $r in /run/*|/var/run/*) [ -f "$r" ] && set -- "$@" --ro-bind "$r" "$r";; esac;;
      keep) case $arg in *[!A-Za-z0-9_]*|[0-9]*) ;; *)
        eval "isset=\${$arg+1} v=\${$arg-}"; [ -n "$isset" ] && set -- "$@" --setenv "$arg" "$v";; esac;;
      seccomp) case $arg in "$(uname -m)":*)
        f=$(mktemp) && printf %b "${arg#*:}" > "$f" && exec 9< "$f" && rm -f "$f" ||
          { echo "crow: the seccomp filter cannot be written to a temporary file" >&2; exit 125; }
        set -- "$@" --seccomp 9;; esac;;
    esac
    mark=; continue
  fi
  case $arg in
    --crow-bind) mark=bind;; --crow-pin) mark=pin;; --crow-ro-bind) mark=ro-bind;; --crow-hide) mark=hide;;
    --crow-root) mark=root;; --crow-ro-home) mark=ro-home;; --crow-protect) mark=protect;; --crow-absent) mark=absent;;
    --crow-resolv) mark=resolv;; --crow-keep) mark=keep;; --crow-seccomp) mark=seccomp;;
    --) tail=1; set -- "$@" "$arg";;
    *) set -- "$@" "$arg";;
  esac
done
[ -n "$absent" ] || exec "$@"
sweep() {
  IFS=$nl
  for p in $absent; do
    d=$(dirname -- "$p")
    if { [ -e "$p" ] || [ -L "$p" ]; } && [ "$(cd -P -- "$d" 2>/dev/null && pwd)" = "$d" ]; then
      rm -rf -- "$p"; echo "crow: the sandbox removed $p: protected paths cannot be created inside it" >&2
    fi
  done
  unset IFS
}
trap 'sweep; exit 129' HUP INT TERM
"$@"; status=$?; sweep; exit $status
"""
PRELUDE_FAILED = 125
BWRAP = "bwrap"
"""Found on the editor's PATH, not crow's."""

_unavailable: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""Editor connection -> why its terminals cannot sandbox, once one showed it."""


def terminal_argv(sandbox: Sandbox, shell: str, command: str, cwd: str, roots: list[str]) -> list[str]:
    """`/bin/sh -c PRELUDE crow-sandbox bwrap ...`: the command in the sandbox, as the editor's machine sees paths.
    `roots` are the session's roots as the editor named them."""
    argv = [BWRAP, *_opening(sandbox), *(arg for root in roots for arg in ("--crow-root", root))]
    if sandbox.level == "workspace":
        entries = [*roots, *sandbox.writable]
        kept = set(outermost(entries))  # checked on crow's machine: the editor's too, when it is the same one
        bound = [path for path in entries if os.path.realpath(os.path.normpath(os.path.expanduser(path))) in kept]
        argv += [arg for path in bound for arg in ("--crow-bind", path)]
        argv += [arg for path in pins(sandbox, sorted(kept)) for arg in ("--crow-pin", path)]
    hidden = [*sandbox.hidden, *(f"~/{store}" for store in SECRET_STORES)]
    argv += [arg for path in dict.fromkeys(hidden) for arg in ("--crow-hide", path)]
    argv += ["--crow-ro-home", "~"]  # the empty $HOME read-only, unless a root shows it
    if sandbox.level == "workspace":
        found = candidates(sandbox, bound)
        argv += [arg for path in found for arg in ("--crow-protect", path, "--crow-absent", path)]
    filters = [f"{machine}:{escaped(machine)}" for machine in AUDIT_ARCH]
    argv += [arg for line in filters for arg in ("--crow-seccomp", line)]
    return ["/bin/sh", "-c", PRELUDE, "crow-sandbox", *argv, *closing(sandbox, shell, command, cwd)]


def _opening(sandbox: Sandbox) -> list[str]:
    """sandbox.opening's, for a machine crow cannot look at: private /tmp, /run and $HOME but its toolchains,
    the environment cleared but for the allow list, the namespaces."""
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--size", str(sandbox.memory_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    argv += [arg for path in [*PRIVATE_RUNTIME, "~"] for arg in ("--crow-hide", path)]
    argv += ["--crow-resolv", "/etc/resolv.conf"]
    argv += [arg for path in [*TOOLCHAIN, *sandbox.home_visible] for arg in ("--crow-ro-bind", f"~/{path}")]
    argv += ["--clearenv", *(arg for name in core_names() for arg in ("--crow-keep", name))]
    argv += [arg for name, value in QUIET.items() for arg in ("--setenv", name, value)]
    return [*argv, *namespaces(sandbox)]


def did_not_start(output: str, exit_code: int | None) -> str | None:
    """Why the sandbox did not start, from the terminal's status and output; None when the command ran.
    A command can only fake this to make crow ask more, never less."""
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    if exit_code == PRELUDE_FAILED and first.startswith("crow: "):
        fix = " (Debian: apt-get install bubblewrap)" if "not installed" in first else ""
        return f"{first.removeprefix('crow: ')}{fix}"
    if exit_code == 1 and first.startswith("bwrap: "):
        return f"bubblewrap cannot create its namespaces there ({first}): {NAMESPACE_FIX}"
    return None


def mark_unavailable(client: Any, why: str) -> None:
    _unavailable[client] = why


def unavailable_in_editor(client: Any) -> str | None:
    """Why this editor's terminals cannot sandbox, once one of them showed it; None until then."""
    why = _unavailable.get(client)
    return f"the editor's machine cannot sandbox commands: {why}" if why else None
