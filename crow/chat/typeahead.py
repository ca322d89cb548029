"""Typing while a turn runs (issue 31): Enter queues the line, shown as queued under the live answer; the
conversation sends the queued lines, in order, once the turn ends. Enter on an empty line steers the first
queued message into the running turn instead (`_session/steering`): it reaches the model at its next step.

The terminal is read key by key during the turn (no canonical mode, no echo: the live region shows the line
being typed), on the loop, without a thread. A permission question pauses it (the question reads its own
line); what is typed but not sent when the turn ends is handed to the line editor.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import sys
import termios
from collections.abc import Awaitable, Callable, Iterator

ENTER = ("\r", "\n")
ERASE = ("\x7f", "\b")
MAX_LINE = 100_000
"""Characters of one typed-ahead line kept (a paste of a whole file stops growing there)."""


class TypeAhead:
    def __init__(self, show: Callable[[list[str], str], None], steer: Callable[[str], Awaitable[bool]]) -> None:
        self.show = show
        """Draws the queued lines and the line being typed (the live view's footer)."""
        self.steer = steer
        """Sends a message into the running turn; False when no turn took it."""
        self.queued: list[str] = []
        self.typed = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._escape = False
        self._fd: int | None = None
        self._steering: set[asyncio.Task[None]] = set()

    def take_typed(self) -> str:
        typed, self.typed = self.typed, ""
        return typed

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Read the keys typed during the turn (only on a terminal)."""
        if not sys.stdin.isatty():
            yield
            return
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
        keys = [*saved[:3], saved[3] & ~(termios.ICANON | termios.ECHO | termios.ECHOCTL), *saved[4:]]
        keys[6] = [*saved[6]]
        keys[6][termios.VMIN], keys[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, keys)
        loop = asyncio.get_running_loop()
        loop.add_reader(fd, self._readable, fd)
        self._fd = fd
        try:
            yield
        finally:
            self._fd = None
            loop.remove_reader(fd)
            termios.tcsetattr(fd, termios.TCSANOW, saved)
            self.show([], "")

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """While a question reads its own line: the terminal as before the turn, no key taken here."""
        fd = self._fd
        if fd is None:
            yield
            return
        loop = asyncio.get_running_loop()
        loop.remove_reader(fd)
        keys = termios.tcgetattr(fd)
        cooked = [*keys[:3], keys[3] | termios.ICANON | termios.ECHO, *keys[4:]]
        termios.tcsetattr(fd, termios.TCSANOW, cooked)
        try:
            yield
        finally:
            termios.tcsetattr(fd, termios.TCSANOW, keys)
            if self._fd == fd:
                loop.add_reader(fd, self._readable, fd)

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:  # the terminal went away: stop reading it
            asyncio.get_running_loop().remove_reader(fd)
            return
        for key in self._decoder.decode(data):
            self.key(key)
        self.show(self.queued, self.typed)

    def key(self, key: str) -> None:
        """One key: Enter queues the line (or steers, on an empty one), Backspace erases; escape sequences
        (arrows, function keys) and other control keys are dropped."""
        if self._escape:
            self._escape = not (key.isalpha() or key == "~")
            return
        if key == "\x1b":
            self._escape = True
        elif key in ENTER:
            self._enter()
        elif key in ERASE:
            self.typed = self.typed[:-1]
        elif key.isprintable() or key == "\t":
            if len(self.typed) < MAX_LINE:
                self.typed += key

    def _enter(self) -> None:
        line, self.typed = self.typed, ""
        if line.strip():
            self.queued.append(line)
        elif self.queued and not self.queued[0].startswith("/"):  # a command runs as its own turn, never steered
            task = asyncio.ensure_future(self._steer(self.queued.pop(0)))
            self._steering.add(task)
            task.add_done_callback(self._steering.discard)

    async def _steer(self, message: str) -> None:
        if not await self.steer(message):  # the turn ended meanwhile: it goes first, as the next prompt
            self.queued.insert(0, message)
        self.show(self.queued, self.typed)

    async def settled(self) -> None:
        """Wait for the steering requests still under way (before the conversation sends what is queued)."""
        if self._steering:
            await asyncio.gather(*self._steering, return_exceptions=True)
