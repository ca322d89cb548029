"""The `crow` command's exit statuses, and the one-line failure that carries one."""

from __future__ import annotations

import os
import signal

from crow_acp.errors import CrowError

OK = 0
"""The turn ended normally (end_turn, max_tokens); `crow check` found nothing broken."""
FAILED = 1
"""The turn failed (the model endpoint or the agent errored); `crow check` found something broken."""
USAGE = 2
"""A mistake on the command line: bad arguments, an empty prompt, a missing --cwd, an unknown or ambiguous session id
(or prefix), nothing to --continue, a bad --mode or --allow/--deny pattern."""
SETUP = 3
"""crow could not start: config.toml is wrong, no model key, the session store does not answer, or the --agent
does not load."""
STOPPED = 4
"""The turn stopped early: max_turn_requests, a refusal, or a cancel by the agent."""
INTERRUPTED = 130
"""Ctrl-C."""

HELP = """\
exit statuses:
  0    the turn ended normally (end_turn, max_tokens); `crow check`: nothing broken
  1    the turn failed (model endpoint or agent error); `crow check`: something is broken
  2    a command-line mistake: bad arguments, empty prompt, missing --cwd, unknown or ambiguous session id,
       nothing to --continue, a bad --mode or --allow/--deny pattern
  3    crow could not start: config.toml error, no model key, a store that does not answer, a bad --agent
  4    the turn stopped early: max_turn_requests, refusal, or cancelled
  130  interrupted with Ctrl-C
  141  the output's reader went away (`| head`): crow ends by SIGPIPE, as cat and git do"""


class Exit(CrowError):
    """Stop the command with one line on stderr and a documented status; never a traceback."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def die_by(sig: int) -> None:
    """End this process by `sig`, as its default action would: a parent sees the signal, a shell 128 + sig."""
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def die_by_sigpipe() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what Python still holds for stdout is flushed nowhere, not onto a closed pipe
    os.close(devnull)
    die_by(signal.SIGPIPE)
