"""`crow sessions`: list stored sessions, print one as a transcript, delete one, or share one.

`share ID USER [--read-only]` gives a `crow serve --users` user full (or read-only: load and fork) access
to the session, `unshare ID USER` takes it back; both write the store directly, as the other actions do,
so they work while the session is open in a server. The command is the operator's, who holds the
database: it sees every user's sessions.

The list marks a delegate's helper session (one a session's "delegations" context links to) with its
parent's id; `--json` prints the list as JSON, `-q` only the ids.

It goes through the session store's public methods only (list_sessions, get, load, delete), on whichever
backend the config names; the transcript is rebuilt with the same replay `session/load` sends to an editor.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crow.exits import FAILED, OK, USAGE, Exit

PREVIEW_LINES = 6


def _say(text: str) -> None:
    """One line of the command's output. Stored model and tool text may hold escape sequences: shown as
    \\xNN, as `crow run` shows them, so replaying a session cannot rewrite the terminal."""
    from crow.run.view import printable

    sys.stdout.write(printable(text) + "\n")


def sessions_command(
    action: str, session_id: str | None, listing: str = "table", *, user: str | None = None, read_only: bool = False
) -> int:
    from crow.logfile import log_to_file
    from crow.startup import load
    from crow_acp.store import SessionBusy, StoreError, open_store, store_url
    from crow_acp.timeline.timeline import Checkpoints

    if action != "list" and not session_id:
        raise Exit(USAGE, f"crow sessions {action} needs a session id (`crow sessions` lists them)")
    if action != "list" and listing != "table":
        raise Exit(USAGE, f"--json and -q are for `crow sessions list`, not {action}")
    share = _share_of(action, user, read_only)
    config = load()
    log_to_file(config.log_dir)
    if store_url(config) is None and not config.db_path.exists():
        records: list[Any] = []
        if action != "list":
            raise Exit(USAGE, f"no stored session {session_id!r} (`crow sessions` lists them)")
        _print_list(records, listing)
        return OK
    try:
        store = open_store(config)
    except StoreError as exc:
        raise Exit(FAILED, str(exc)) from exc
    try:
        forget = Checkpoints(config.home, config.checkpoints).delete  # a deleted session's file checkpoints go too
        asyncio.run(_act(store, action, session_id or "", listing, share, forget))
    except SessionBusy as exc:  # a StoreError whose message needs no database name
        raise Exit(FAILED, str(exc)) from exc
    except (sqlite3.Error, StoreError) as exc:
        raise Exit(FAILED, f"{store_url(config) or config.db_path}: {exc}") from exc
    return OK


async def _act(
    store: Any, action: str, session_id: str, listing: str, share: Share | None, forget: Callable[[str], None]
) -> None:
    try:
        await _act_on(store, action, session_id, listing, share, forget)
    finally:
        await store.close()


async def _act_on(
    store: Any, action: str, session_id: str, listing: str, share: Share | None, forget: Callable[[str], None]
) -> None:
    if action == "list":
        _print_list(await store.list_sessions(), listing)
        return
    from crow.run.resume import resolve_id

    session_id = await resolve_id(store, session_id)  # the whole id, or a unique prefix of 6 characters or more
    record = await store.get(session_id)
    if record is None:  # deleted between the two reads
        raise Exit(USAGE, f"no stored session {session_id!r} (`crow sessions` lists them)")
    if action == "show":
        _print_transcript(record, await store.load(session_id))
    elif share is not None:
        await _share(store, record, share)
    else:
        await store.delete(session_id)  # refused while another crow process has it open
        forget(session_id)
        _say(f"deleted session {session_id}")


@dataclass(frozen=True)
class Share:
    user: str
    access: str | None
    """"read", "full", or None to take a share back."""


def _share_of(action: str, user: str | None, read_only: bool) -> Share | None:
    from crow_acp.acp.sessions.ownership import USER_NAME

    if action not in ("share", "unshare"):
        if user is not None or read_only:
            raise Exit(USAGE, f"a user and --read-only are for `crow sessions share`, not {action}")
        return None
    if user is None or not USER_NAME.fullmatch(user):
        raise Exit(USAGE, f"crow sessions {action} ID USER: a user name (letters, digits, '_', '.', '-'; at most 64)")
    if action == "unshare" and read_only:
        raise Exit(USAGE, "--read-only is for `crow sessions share`")
    return Share(user, None if action == "unshare" else "read" if read_only else "full")


async def _share(store: Any, record: Any, share: Share) -> None:
    if share.user == record.owner:
        raise Exit(USAGE, f"session {record.id} is {share.user}'s own: there is nothing to share with them")
    await store.share(record.id, share.user, share.access)
    if share.access is None:
        _say(f"session {record.id} is no longer shared with {share.user}")
    else:
        _say(f"session {record.id} (of {record.owner}) shared with {share.user}: {share.access} access")


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def helper_parents(records: list[Any]) -> dict[str, str]:
    """Each delegate helper session's parent: the session whose "delegations" context links to it."""
    from crow_acp.multi.delegate import LINKS

    parents: dict[str, str] = {}
    for record in records:
        context = record.data.get("context")
        links = context.get(LINKS) if isinstance(context, dict) else None
        for link in links if isinstance(links, list) else []:
            if isinstance(link, dict) and isinstance(link.get("session"), str):
                parents[link["session"]] = record.id
    return parents


def _print_list(records: list[Any], listing: str = "table") -> None:
    parents = helper_parents(records)
    if listing == "json":
        sys.stdout.write(json.dumps([_as_json(record, parents.get(record.id)) for record in records], indent=2) + "\n")
        return
    if listing == "ids":
        for record in records:
            _say(record.id)
        return
    if not records:
        _say("no stored sessions")
        return
    _say(f"{'id':<32}  {'updated':<16}  {'title':<40}  directory")
    for record in records:
        title = (record.title or "(untitled)").replace("\n", " ")
        title = title if len(title) <= 40 else title[:39] + "…"
        parent = f"  (helper of {parents[record.id]})" if record.id in parents else ""
        _say(f"{record.id:<32}  {_when(record.updated_at):<16}  {title:<40}  {record.cwd}{parent}")


def _as_json(record: Any, parent: str | None) -> dict[str, Any]:
    return {
        "id": record.id,
        "title": record.title,
        "cwd": record.cwd,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "agent": record.data.get("agent"),
        "owner": record.owner,
        "helper_of": parent,
    }


def _print_transcript(record: Any, entries: list[Any]) -> None:
    from acp.schema import AgentMessageChunk, AgentThoughtChunk, TextContentBlock, UserMessageChunk

    from crow_acp.acp.updates.shapes import replay_updates

    _say(f"session {record.id} · {record.title or '(untitled)'}")
    _say(f"directory {record.cwd} · updated {_when(record.updated_at)}")
    last = None
    for update in replay_updates(entries):
        kind = update.session_update
        chunk = isinstance(update, UserMessageChunk | AgentMessageChunk | AgentThoughtChunk)
        text = update.content.text if chunk and isinstance(update.content, TextContentBlock) else None
        if kind == "user_message_chunk" and text is not None:
            _say(("" if last == kind else "\n") + "> " + text.replace("\n", "\n> "))
        elif kind == "agent_thought_chunk" and text is not None:
            _say("\n│ " + text.replace("\n", "\n│ "))
        elif kind == "agent_message_chunk" and text is not None:
            _say(("" if last == kind else "\n") + text)
        elif kind == "tool_call":
            _print_tool(update)
        last = kind


def _print_tool(update: Any) -> None:
    from crow.run.view import ToolState

    state = ToolState(update.tool_call_id)
    state.merge(update)
    _say(f"⚙ {state.title} [{state.status}]")
    lines = state.lines()
    for line in lines[:PREVIEW_LINES]:
        _say("  " + line)
    if len(lines) > PREVIEW_LINES:
        _say(f"  … {len(lines) - PREVIEW_LINES} more lines")
    for diff in state.diffs():
        _say(f"  diff {diff.path}")
