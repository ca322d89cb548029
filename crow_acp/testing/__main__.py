"""`python -m crow_acp.testing`: a scripted model on 127.0.0.1 until Ctrl-C.

It prints its base URL (the one line on stdout). With --script, the replies in the file are served in
order, then again from the start; without it, one reply forever. Exit status 1: the port is in use
or the script is invalid (one line on stderr).

`... -- COMMAND ARGS` runs the command against it instead (OPENAI_BASE_URL set, on a free port unless
--port is given), then stops, with the command's exit status: nothing to wait for, nothing left running.
"""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

from . import Reply, ScriptedModel
from .script import ScriptError, load_script

DEFAULT_PORT = 8766
"""Not 8765, `crow serve`'s: the two run side by side in a demo."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m crow_acp.testing", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="default 8766 (crow serve has 8765); with a COMMAND, a free port")
    parser.add_argument("--script", type=Path, help="a JSON list of replies (see crow_acp/testing/script.py)")
    parser.add_argument("--text", default="hello from the scripted model", help="the reply, without --script")
    parser.add_argument("--reasoning", default="")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between streamed chunks")
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS: run it against the model")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        replies = load_script(args.script) if args.script else [Reply(text=args.text, reasoning=args.reasoning)]
    except ScriptError as exc:
        sys.stderr.write(f"crow_acp.testing: {exc}\n")
        return 1
    for reply in replies:
        if isinstance(reply, Reply) and args.delay:
            reply.delay = args.delay
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    served = iter(range(sys.maxsize))
    port = args.port if args.port is not None else (0 if command else DEFAULT_PORT)
    model = ScriptedModel(default=lambda request: replies[next(served) % len(replies)], model=args.model, port=port)
    try:
        model.start()
    except OSError as exc:
        why = "the port is already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        sys.stderr.write(f"crow_acp.testing: cannot listen on 127.0.0.1:{port}: {why}; choose another --port\n")
        return 1
    if command:
        try:
            return _run(command, model.base_url)
        finally:
            model.stop()
    try:
        sys.stdout.write(model.base_url + "\n")  # the one output of this command line
        sys.stdout.flush()
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    return 0


def _run(command: list[str], base_url: str) -> int:
    """The command's exit status (crow needs no key for an OPENAI_BASE_URL: the scripted model checks none)."""
    try:
        status = subprocess.run(command, env={**os.environ, "OPENAI_BASE_URL": base_url}, check=False).returncode
    except FileNotFoundError:
        sys.stderr.write(f"crow_acp.testing: no such command: {command[0]}\n")
        return 127
    except KeyboardInterrupt:  # Ctrl-C reached the command too: it ended by it
        return 130
    return 128 - status if status < 0 else status  # a command killed by a signal: the shell's status for it


if __name__ == "__main__":
    sys.exit(main())
