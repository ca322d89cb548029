"""crow chat's own slash commands, and the session's (skills, MCP prompts), which go to the agent as prompts."""

from __future__ import annotations

import calendar
import time
from collections.abc import Awaitable, Callable
from typing import Any

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectGroup

from crow.chat.chat import PAGE, Chat
from crow.chat.replay import compact

OWN = {
    "mode": "show or switch the permission mode",
    "model": "show or switch the model",
    "new": "start a new session",
    "sessions": "list recent sessions, this directory's first",
    "resume": "continue a stored session: /resume ID",
    "cost": "tokens and cost of this session so far",
    "help": "list the commands",
    "exit": "leave (Ctrl-D does too)",
}


def choices(option: Any) -> list[Any]:
    """A select option's values, out of their groups."""
    if not isinstance(option, SessionConfigOptionSelect):
        return []
    return [
        v for item in option.options for v in (item.options if isinstance(item, SessionConfigSelectGroup) else [item])
    ]


class Commands:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "mode": lambda argument: self._option("mode", argument),
            "model": lambda argument: self._option("model", argument),
            "new": self._new,
            "sessions": self._sessions,
            "resume": self._resume,
            "cost": self._cost,
            "help": self._help,
        }

    def session_commands(self) -> dict[str, str]:
        return {c.name: c.description for c in self.chat.client.commands if c.name not in OWN}

    def names(self) -> dict[str, str]:
        return {**self.session_commands(), **OWN}

    def values(self, name: str) -> list[str]:
        """What a command's argument may be, for completion."""
        if name in ("mode", "model"):
            return [choice.value for choice in choices(self._find(name))]
        return []

    @staticmethod
    def is_own(line: str) -> bool:
        words = line[1:].split(maxsplit=1) if line.startswith("/") else []
        return bool(words) and words[0] in OWN

    def is_session_command(self, line: str) -> bool:
        words = line[1:].split(maxsplit=1) if line.startswith("/") else []
        return bool(words) and words[0] in self.session_commands()

    async def run(self, line: str) -> bool:
        """Run one of crow's commands; False when it is /exit."""
        name, _, argument = line[1:].strip().partition(" ")
        if name == "exit":
            return False
        await self.handlers[name](argument.strip())
        return True

    def _find(self, option_id: str) -> Any:
        return next((o for o in self.chat.client.config_options if o.id == option_id), None)

    async def _option(self, option_id: str, wanted: str) -> None:
        option = self._find(option_id)
        values = choices(option)
        if not values:
            self.chat.say(f"this agent has no {option_id} to choose")
            return
        current_value = option.current_value
        listing = ", ".join(_label(v, option_id) + (" (current)" if v.value == current_value else "") for v in values)
        current = next((v for v in values if v.value == option.current_value), None)
        if not wanted:
            shown = _label(current, option_id) if current is not None else option.current_value
            self.chat.say(f"{option_id}: {shown}; {option_id}s: {listing}")
            return
        if wanted not in {v.value for v in values}:
            self.chat.say(f"unknown {option_id} {wanted!r}; {option_id}s: {listing}", "yellow")
            return
        conn, sid = self.chat.link.conn, self.chat.session_id
        response = await self.chat.link.served.call(
            conn.set_config_option(config_id=option_id, session_id=sid, value=wanted)
        )
        self.chat.client.config_options = list(response.config_options)
        self.chat.say(f"{option_id}: {_label(next(v for v in values if v.value == wanted), option_id)}")

    async def _new(self, _: str) -> None:
        await self.chat.new()
        self.chat.say(f"new session {self.chat.session_id}")

    async def _sessions(self, _: str) -> None:
        here = (await self.chat.sessions(self.chat.cwd))[:PAGE]
        elsewhere = [s for s in await self.chat.sessions() if s.cwd != self.chat.cwd][:PAGE]
        if not here and not elsewhere:
            self.chat.say("no stored sessions")
        for info in here + elsewhere:
            mark = "*" if info.session_id == self.chat.session_id else " "
            place = "" if info.cwd == self.chat.cwd else f"  ({info.cwd})"
            self.chat.say(f"{mark} {info.session_id}  {_when(info.updated_at)}  {info.title or '(untitled)'}{place}")

    async def _resume(self, wanted: str) -> None:
        if not wanted:
            self.chat.say("/resume needs a session id (/sessions lists them)", "yellow")
            return
        transcript = await self.chat.resume(wanted)
        for line in compact(transcript):
            self.chat.view.out.print(line)
        self.chat.say(f"resumed session {self.chat.session_id}")

    async def _cost(self, _: str) -> None:
        usage = self.chat.client.usage
        if usage is None:
            self.chat.say("no usage reported yet in this session")
            return
        cost = f" · {usage.cost.amount:.4f} {usage.cost.currency}" if usage.cost is not None else " · no prices set"
        self.chat.say(f"context: {usage.used:,} of {usage.size:,} tokens{cost}")

    async def _help(self, _: str) -> None:
        for name, about in {**OWN, **self.session_commands()}.items():
            self.chat.say(f"/{name:<10} {about}")
        self.chat.say(
            "Enter sends · Esc Enter or Ctrl-J: new line · Esc Esc: /rewind · Ctrl-C cancels a turn · Ctrl-D exits"
        )


def _when(stamp: str | None) -> str:
    """session/list's UTC time, in local time as `crow sessions` shows it."""
    if not stamp:
        return "?"
    try:
        parsed = time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return stamp
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(calendar.timegm(parsed)))


def _label(choice: Any, option_id: str) -> str:
    """A choice as the user knows it: a model profile with the model id it sends ("default: gpt-4o-mini")."""
    model_id = choice.description if option_id == "model" else None
    return f"{choice.value}: {model_id}" if model_id and model_id != choice.value else choice.value
