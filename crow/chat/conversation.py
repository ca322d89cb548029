"""The conversation's loop: read a line, run a slash command or send it as a turn, until /exit or Ctrl-D."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from acp import RequestError

from crow.chat.chat import Chat
from crow.chat.commands import Commands
from crow.chat.editor import LineEditor, SlashCompleter
from crow.exits import OK, Exit
from crow.run import Stop
from crow.run.client import TerminalClient
from crow.run.link import linked, message_of
from crow.run.live import LiveView
from crow.run.options import HostOptions
from crow.run.session import show_warnings


async def converse(options: HostOptions, view: LiveView, agent: Any, stop: Stop) -> int:
    await show_warnings(options, view)
    async with linked(agent, TerminalClient(view), "crow-chat") as link:
        chat = Chat(link, view, options.cwd, stop)
        commands = Commands(chat)
        if options.session:
            await commands.run(f"/resume {options.session}")
        else:
            await chat.new()
        if options.mode:  # --mode: as if the conversation began with /mode
            await commands.run(f"/mode {options.mode}")
        editor = LineEditor(
            view.screen, options.config.home / "chat_history", SlashCompleter(commands.names, commands.values)
        )
        chat.say(f"session {chat.session_id} · /help for commands · Ctrl-D exits")
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, chat.interrupt)
        try:
            return await _talk(chat, commands, editor)
        finally:
            loop.remove_signal_handler(signal.SIGINT)


async def _talk(chat: Chat, commands: Commands, editor: LineEditor) -> int:
    while True:
        try:
            if (line := chat.next_queued()) is not None:  # typed during the last turn: its turn now
                chat.say(f"> {line}", "")
            else:
                line = await editor.read(chat.ahead.take_typed())
        except KeyboardInterrupt:  # Ctrl-C at the prompt: the line is dropped, the conversation goes on
            continue
        except EOFError:  # Ctrl-D on an empty line
            return OK
        if not line.strip():
            continue
        try:
            if commands.is_own(line):
                if not await commands.run(line):
                    return OK
            elif line.startswith("/") and not commands.is_session_command(line):
                chat.say(f"unknown command {line.split()[0]} (/help lists them)", "yellow")
            else:
                await chat.send(line)
        except Exit as mistake:  # a command's mistake (no such session): one line, and the conversation goes on
            chat.say(f"crow: {mistake.message}", "red")
        except RequestError as refused:  # the agent refused a command's request (session/list, an option)
            chat.say(f"crow: {message_of(refused)}", "red")
