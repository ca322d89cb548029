"""`crow chat` (and `crow` alone on a terminal): a conversation with the agent hosted in this process.

It is `crow run` turn after turn: the same hosted agent and client (crow/run/link.py, client.py), the same
live view with the answer rendered as Markdown (crow/run/live.py), the same fail-closed permission prompt.
Around it: a line editor with history (editor.py), what is typed during a turn, queued or steered (typeahead.py),
crow's slash commands and the session's (commands.py), and one session whose "always" answers hold until /new or
/resume. prompt_toolkit is imported only here.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from crow.exits import USAGE, Exit
from crow.run import Stop, host
from crow.run.options import HostOptions
from crow.run.screen import Screen
from crow.startup import env_warnings


def chat_command(args: argparse.Namespace, cwd: str) -> int:
    """`crow chat`: the configuration checked as `crow run` checks it, then the conversation, in a new session or
    the one --session, --continue or --resume names (resolved before the agent starts, crow/run/resume.py)."""
    from crow.permission_flags import with_rules
    from crow.startup import terminal_setup

    config, flags = terminal_setup(args)
    session = args.session or args.resume_chat or None
    if args.resume_chat == "":  # --resume alone: a numbered list of this directory's sessions
        from crow.run.resume import pick_in

        session = pick_in(config, cwd)
    options = HostOptions(
        cwd=cwd,
        log_dir=config.log_dir,
        session=session,
        continue_last=args.continue_last,
        mode=flags.mode,
        verbose=args.verbose,
        agent=args.agent,
        config=with_rules(config, flags),
        warnings=env_warnings() + config.warnings(),
    )
    return run_chat(options)


def run_chat(options: HostOptions) -> int:
    """Talk until /exit or Ctrl-D (status 0). A mistake before the first prompt is one `crow:` line."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise Exit(
            USAGE, "crow chat needs a terminal; for a pipe, use crow run (crow run - reads the prompt from stdin)"
        )

    def view_for(screen: Screen) -> Any:
        from crow.run.live import LiveView

        return LiveView(screen, approve=False, verbose=options.verbose, cwd=options.cwd, markdown=True)

    async def drive(view: Any, agent: Any, stop: Stop) -> int:
        from crow.chat.conversation import converse

        return await converse(options, view, agent, stop)

    return host(options, view_for, drive)
