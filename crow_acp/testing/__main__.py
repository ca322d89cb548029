"""`python -m crow_acp.testing`: a scripted model on 127.0.0.1 until Ctrl-C.

It prints its base URL (the one line on stdout). With --script, the replies in the file are served in
order, then again from the start; without it, one reply forever. Exit status 1: the port is in use
or the script is invalid (one line on stderr).
"""

from __future__ import annotations

import argparse
import errno
import sys
import threading
from pathlib import Path

from . import Reply, ScriptedModel
from .script import ScriptError, load_script


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m crow_acp.testing", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--script", type=Path, help="a JSON list of replies (see crow_acp/testing/script.py)")
    parser.add_argument("--text", default="hello from the scripted model", help="the reply, without --script")
    parser.add_argument("--reasoning", default="")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between streamed chunks")
    parser.add_argument("--model", default="scripted-model")
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
    served = iter(range(sys.maxsize))
    model = ScriptedModel(
        default=lambda request: replies[next(served) % len(replies)], model=args.model, port=args.port
    )
    try:
        model.start()
    except OSError as exc:
        why = "the port is already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        sys.stderr.write(f"crow_acp.testing: cannot listen on 127.0.0.1:{args.port}: {why}; choose another --port\n")
        return 1
    try:
        sys.stdout.write(model.base_url + "\n")  # the one output of this command line
        sys.stdout.flush()
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
