"""One conversation's state: the hosted agent, the session it talks in, and the turn that is running.

Ctrl-C during a turn cancels it (session/cancel; open permission questions are answered "cancelled") and the
conversation goes on; a second Ctrl-C before the turn has stopped ends crow as Ctrl-C ends `crow run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import termios
from collections.abc import Iterator
from typing import Any

from rich.text import Text

from crow.chat.typeahead import TypeAhead
from crow.exits import USAGE, Exit
from crow.run import Stop
from crow.run.link import AgentLink, Turn
from crow.run.live import LiveView
from crow.run.resume import MIN_PREFIX
from crow.run.view import printable

PAGE = 10
"""Sessions /sessions lists from this directory, and from elsewhere."""
MAX_PAGES = 20
"""Pages of session/list read at most."""


class Chat:
    def __init__(self, link: AgentLink, view: LiveView, cwd: str, stop: Stop) -> None:
        self.link = link
        self.client = link.client
        self.view = view
        self.cwd = cwd
        self.stop = stop
        self.session_id = ""
        self.turn: asyncio.Future[Turn] | None = None
        self.cancelling: asyncio.Future[None] | None = None
        self.ahead = TypeAhead(view.typing, self._steer)
        """What the user types while a turn runs: queued, or steered into the turn (typeahead.py)."""
        view.input_paused = self.ahead.paused

    def say(self, message: str, style: str = "dim") -> None:
        self.view.out.print(Text(printable(message), style=style))

    def _forget_usage(self) -> None:
        self.client.usage = self.view.used = self.view.cost = None

    async def new(self) -> None:
        self._forget_usage()
        await self._switch(await self.link.new_session(self.cwd))

    async def resume(self, wanted: str) -> list[Any]:
        """Load a stored session by id; its history is returned to be shown (crow/chat/replay.py)."""
        info = await self.find_session(wanted)
        transcript: list[Any] = []
        self._forget_usage()
        await self.link.load_session(info.cwd, info.session_id, transcript)
        await self._switch(info.session_id)
        return transcript

    async def _switch(self, session_id: str) -> None:
        """Talk in `session_id` from now on; the session left is closed, once the new one is open."""
        left, self.session_id = self.session_id, session_id
        if left and left != session_id:
            await self.link.close_session(left)

    async def find_session(self, wanted: str) -> Any:
        """The stored session with this id, or the one whose id starts with it (6 characters or more), as
        session/list's SessionInfo; else Exit naming the mistake (an ambiguous prefix lists its candidates)."""
        listed = await self.sessions()
        if exact := [info for info in listed if info.session_id == wanted]:
            return exact[0]
        found = [info for info in listed if len(wanted) >= MIN_PREFIX and info.session_id.startswith(wanted)]
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(f"{info.session_id} ({info.title or 'untitled'})" for info in found[:10])
            raise Exit(USAGE, f"{wanted!r} is the start of {len(found)} sessions: {names}")
        raise Exit(USAGE, f"no stored session {wanted!r} (/sessions lists them)")

    async def sessions(self, cwd: str | None = None) -> list[Any]:
        """Stored sessions (in `cwd` only, when given), newest first."""
        found: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):  # an agent (--agent) whose cursor never ends must not hold the prompt
            page = await self.link.served.call(self.link.conn.list_sessions(cwd=cwd, cursor=cursor))
            found += page.sessions
            cursor = page.next_cursor
            if not cursor:
                break
        return sorted(found, key=lambda info: info.updated_at or "", reverse=True)

    async def send(self, text: str) -> None:
        """One turn; it ends with its closing line, or the agent's error, and the conversation goes on."""
        self.turn = asyncio.ensure_future(self.link.prompt(self.session_id, text))
        try:
            with no_control_echo(), self.ahead.reading():
                turn = await self.turn
            await self.ahead.settled()
        finally:
            self.turn, self.cancelling = None, None
        if turn.error is not None:
            self.view.error(turn.error, self.session_id)
        else:
            self.view.stop(turn.stop_reason or "end_turn", self.session_id)

    async def _steer(self, message: str) -> bool:
        """A queued message into the running turn; False when no turn took it (it is sent as the next prompt)."""
        if await self.link.steer(self.session_id, message) != "injected":
            return False
        self.say(f"steered: {message}", "")
        return True

    def next_queued(self) -> str | None:
        """The first message typed during the last turn, to be sent now."""
        return self.ahead.queued.pop(0) if self.ahead.queued else None

    def interrupt(self) -> None:
        """SIGINT. At the prompt Ctrl-C is a key (the editor reads the terminal raw): a signal then is ignored."""
        if self.turn is None:
            return
        if self.cancelling is not None:  # a second Ctrl-C: the user wants out, now
            self.stop(signal.SIGINT)
            return
        if dropped := len(self.ahead.queued):  # a cancel ends the turn and what waits behind it, as in ACP
            self.ahead.queued.clear()
            self.say(f"cancelled: {dropped} queued message{'s' if dropped > 1 else ''} not sent", "yellow")
        self.cancelling = asyncio.ensure_future(self.link.cancel(self.session_id))


@contextlib.contextmanager
def no_control_echo() -> Iterator[None]:
    """The terminal does not echo "^C" while a turn streams: the echo moved the cursor under the live region,
    which then erased the wrong lines and left the partial answer shown twice."""
    fd = sys.stdin.fileno() if sys.stdin.isatty() else None
    if fd is None:
        yield
        return
    saved = termios.tcgetattr(fd)
    quiet = [*saved[:3], saved[3] & ~termios.ECHOCTL, *saved[4:]]
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
