"""`crow run`: a real ACP client that drives `crow acp` in a child process and shows the stream.

On a terminal the stream is drawn with rich (crow/run/live.py); in a pipe stdout carries only the
answer (crow/run/plain.py); `--format json` prints one JSON object per event. rich is imported only
here, never on `crow acp`'s start-up path.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from crow.exits import INTERRUPTED
from crow.run.options import RunOptions


def make_view(options: RunOptions):  # -> View
    from crow.run.plain import JsonView, PlainView

    if options.format == "json":
        return JsonView(approve=options.approve, raw=options.raw)
    if sys.stdout.isatty():
        from crow.run.live import LiveView

        return LiveView(approve=options.approve, verbose=options.verbose)
    return PlainView(approve=options.approve, raw=options.raw)


def run_prompt(options: RunOptions) -> int:
    """Run one prompt; the exit status follows crow/exits.py. Ctrl-C at any moment is 130, quietly."""
    from crow.logfile import log_to_file

    log_to_file(options.log_dir, verbose=options.verbose)
    view = make_view(options)
    try:
        return asyncio.run(_main(options, view))
    except KeyboardInterrupt:
        view.interrupted()
        return INTERRUPTED
    finally:
        view.close()


async def _main(options: RunOptions, view: Any) -> int:
    from crow.run.child import start_child

    process = await start_child(options)  # the child boots while the SDK imports here (~1 s each)
    try:
        from crow.run.session import drive
    except BaseException:  # Ctrl-C during the import: drive never owned the child
        process.kill()
        await process.wait()
        raise
    return await drive(options, view, process)
