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
import signal
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from typing import Any

from crow.exits import FAILED, INTERRUPTED, SETUP, USAGE, Exit, die_by
from crow.run.options import HostOptions, RunOptions
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

        return LiveView(screen, approve=options.approve, verbose=options.verbose, cwd=options.cwd)
    return PlainView(screen, approve=options.approve, raw=options.raw, cwd=options.cwd)


def run_prompt(options: RunOptions) -> int:
    """Run one prompt; the exit status follows crow/exits.py. Ctrl-C at any moment is 130, quietly."""
    from crow.run.session import drive

    return host(
        options, lambda screen: make_view(options, screen), lambda view, agent, stop: drive(options, view, agent)
    )


Drive = Callable[[Any, Any, "Stop"], Awaitable[int]]
"""What to do with the hosted agent: (view, agent, stop) -> exit status."""


def host(options: HostOptions, view_for: Callable[[Screen], Any], drive: Drive) -> int:
    """Host the agent in this process, with the terminal kept for the view, and `drive` it."""
    from crow_acp.server.stdio import configure_logging
    from crow_acp.telemetry.setup import log_format, traced

    lines = OutputLines(options.verbose)
    stop = Stop()
    status = INTERRUPTED
    with caught_output(lines, lambda: stop(signal.SIGPIPE)) as screen:
        fmt = log_format(options.log_format, options.config) if options.config is not None else "text"
        configure_logging(options.log_dir, stderr=options.verbose, fmt=fmt)  # stderr is caught: shown only with -v
        view = view_for(screen)
        lines.show = view.log
        try:
            with traced(options.config) if options.config is not None else nullcontext(False):
                status = asyncio.run(_main(options, view, lines, stop, drive))
        except KeyboardInterrupt:
            view.interrupted()
            return INTERRUPTED
        except asyncio.CancelledError:  # SIGTERM, SIGHUP or a closed pipe: the turn is stopped; now end by it
            if stop.signal is None:
                raise
            if stop.signal != signal.SIGPIPE:  # a reader that went away is told nothing, as by `cat`
                view.interrupted()
        finally:
            view.close()
    if stop.signal is not None:  # the pipe may close at the last line, after the turn ended
        die_by(stop.signal)
    return status


class Stop:
    """The signal that stops the turn, as Ctrl-C does; crow run then ends by it, as a Unix tool would."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.task: asyncio.Task[Any] | None = None

    def __call__(self, sig: int) -> None:
        if self.signal is not None:
            return
        self.signal = sig
        if self.task is not None and not self.task.done():
            self.task.get_loop().call_soon_threadsafe(self.task.cancel)  # a view may write from the drain thread


async def _main(options: HostOptions, view: Any, lines: OutputLines, stop: Stop, drive: Drive) -> int:
    loop = asyncio.get_running_loop()
    lines.loop = loop
    stop.task = asyncio.current_task()
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # under nohup, a hang-up stays ignored
            loop.add_signal_handler(sig, stop, sig)
    if options.agent is None:  # an --agent may bring its own store
        await _check_store(options.config)
        options.session = await _chosen_session(options)
    elif options.continue_last:
        raise Exit(USAGE, "--continue looks in crow's own store; with --agent, give --session and the whole id")
    return await drive(view, _build_agent(options), stop)


async def _check_store(config: Any) -> None:
    """A store that does not answer stops crow before the agent starts: one line, status 3."""
    from crow.startup import store_location, store_problem

    if problem := await store_problem(config):
        raise Exit(SETUP, f"the session store does not answer ({store_location(config)}): {problem}")


async def _chosen_session(options: HostOptions) -> str | None:
    """The whole id of the session --session or --continue names (crow/run/resume.py), before the agent starts."""
    if options.session is None and not options.continue_last:
        return None
    from crow.run.resume import in_store, latest_in, resolve_id

    if options.continue_last:
        return await in_store(options.config, lambda store: latest_in(store, options.cwd))
    return await in_store(options.config, lambda store: resolve_id(store, options.session or ""))


def _build_agent(options: HostOptions) -> Any:
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
