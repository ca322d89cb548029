"""`crow run`: a real ACP client that drives the agent, hosted in this process, and shows the stream.

The agent is served over an in-memory ACP connection that is still crow's wire, both ways
(crow_acp/server/hosted.py): one process, real JSON-RPC. On a terminal the stream is drawn with rich
(crow/run/live.py); in a pipe stdout carries only the answer (crow/run/plain.py); `--format json`
prints one JSON object per event. Everything else the process writes is caught (crow/run/screen.py).
rich is imported only here, never on `crow acp`'s start-up path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import Any

from crow.exits import FAILED, INTERRUPTED, Exit
from crow.run.options import RunOptions
from crow.run.screen import OutputLines, Screen, caught_output

log = logging.getLogger("crow.run")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Stop the turn as Ctrl-C does, then end by the signal, as crow run always has."""


def make_view(options: RunOptions, screen: Screen):  # -> View
    from crow.run.plain import JsonView, PlainView

    if options.format == "json":
        return JsonView(screen, approve=options.approve, raw=options.raw)
    if screen.out.isatty():
        from crow.run.live import LiveView

        return LiveView(screen, approve=options.approve, verbose=options.verbose)
    return PlainView(screen, approve=options.approve, raw=options.raw)


def run_prompt(options: RunOptions) -> int:
    """Run one prompt; the exit status follows crow/exits.py. Ctrl-C at any moment is 130, quietly."""
    from crow_acp.server.stdio import configure_logging

    lines = OutputLines(options.verbose)
    stopped_by: list[int] = []
    with caught_output(lines) as screen:
        configure_logging(options.log_dir, stderr=options.verbose)  # stderr is caught: shown only with -v
        view = make_view(options, screen)
        lines.show = view.log
        try:
            return asyncio.run(_main(options, view, lines, stopped_by))
        except KeyboardInterrupt:
            view.interrupted()
            return INTERRUPTED
        except asyncio.CancelledError:  # SIGTERM or SIGHUP: the turn is stopped; now end by that signal
            if not stopped_by:
                raise
            view.interrupted()
        finally:
            view.close()
    _die_by(stopped_by[0])
    return INTERRUPTED


async def _main(options: RunOptions, view: Any, lines: OutputLines, stopped_by: list[int]) -> int:
    loop = asyncio.get_running_loop()
    lines.loop = loop
    main = asyncio.current_task()
    assert main is not None

    def stop(sig: int) -> None:
        stopped_by.append(sig)
        main.cancel()

    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # under nohup, a hang-up stays ignored
            loop.add_signal_handler(sig, stop, sig)
    agent = _build_agent(options)
    from crow.run.session import drive

    return await drive(options, view, agent)


def _build_agent(options: RunOptions) -> Any:
    from crow.agent_loader import load_agent
    from crow.logfile import log_hint
    from crow_acp.server import startup_gc

    try:
        agent = load_agent(options.agent, options.config)  # a user's --agent that fails to load exits 3 here
    except Exit:
        raise
    except Exception as exc:  # crow's own agent failed to build: one line, the rest in crow.log
        log.exception("building the agent failed")
        raise Exit(FAILED, f"the agent could not start: {exc}; see the log, {log_hint()}") from exc
    startup_gc.resume()
    return agent


def _die_by(sig: int) -> None:
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
