"""The chat's line editor (prompt_toolkit): history, multi-line input, and completion of slash commands and of
their arguments. Enter sends; Esc Enter or Ctrl-J starts a new line (a paste keeps its newlines); Esc Esc on an
empty line sends /rewind (the agent's list of the messages to go back to).
prompt_toolkit is imported here only, when a conversation starts: never on `crow acp`'s start-up path."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import create_output

from crow.chat.history import BoundedHistory
from crow.run.screen import Screen

PROMPT = "> "
CONTINUATION = "· "
REWIND = "/rewind"
"""What Esc Esc on an empty line sends: the agent's slash command lists the messages to rewind to."""


class SlashCompleter(Completer):
    """`/na` completes to the commands that start so; `/mode p` to the values that command takes."""

    def __init__(self, commands: Callable[[], dict[str, str]], values: Callable[[str], list[str]]) -> None:
        self.commands = commands
        """Command names (without the slash) and what each does, as of now: the session's change."""
        self.values = values

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        name, space, argument = text[1:].partition(" ")
        if not space:
            for command, about in sorted(self.commands().items()):
                if command.startswith(name):
                    yield Completion("/" + command, start_position=-len(text), display_meta=about)
            return
        for value in self.values(name):
            if value.startswith(argument):
                yield Completion(value, start_position=-len(argument))


def _bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    @bindings.add("c-j")
    def _new_line(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("escape", "escape", filter=Condition(_empty_line))
    def _rewind(event: KeyPressEvent) -> None:
        event.current_buffer.text = REWIND
        event.current_buffer.validate_and_handle()

    return bindings


def _empty_line() -> bool:
    return not get_app().current_buffer.text


class LineEditor:
    def __init__(self, screen: Screen, history: Path, completer: SlashCompleter) -> None:
        self.session: PromptSession[str] = PromptSession(
            history=BoundedHistory(history),
            completer=completer,
            complete_while_typing=True,
            key_bindings=_bindings(),
            prompt_continuation=CONTINUATION,
            output=create_output(stdout=screen.out),  # fd 1 is caught (crow/run/screen.py); this is the terminal
        )

    async def read(self, typed: str = "") -> str:
        """The next input, starting with `typed` (keys typed during the turn, not sent). Ctrl-C raises
        KeyboardInterrupt (the line is dropped), Ctrl-D on an empty line EOFError."""
        # The conversation owns SIGINT (it cancels a turn) and the loop's exception handler.
        return await self.session.prompt_async(PROMPT, default=typed, handle_sigint=False, set_exception_handler=False)
