"""Finding a stored session from the command line: an id or a unique prefix of one, the most recent
session of a directory, or one picked from a numbered list.

Every failure is one `crow:` line with status 2 (USAGE): an unknown id, an ambiguous prefix (its
candidates listed on that line), a prefix shorter than MIN_PREFIX, no session in the directory.
The prefix lookup runs in the store (`find_prefix`), never over every session.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TextIO, TypeVar

from crow.exits import SETUP, USAGE, Exit

if TYPE_CHECKING:
    from crow_acp.config import Config
    from crow_acp.store import SessionRecord, SessionStore

T = TypeVar("T")
MIN_PREFIX = 6
"""A shorter prefix is refused unless it is a whole id: six hex digits make a collision unlikely."""
SHOWN = 10
"""Candidates named on an ambiguous prefix's line, and sessions the picker offers."""
LISTS_THEM = "`crow sessions` lists them"


async def resolve_id(store: SessionStore, given: str) -> str:
    """The id of the session `given` names: the whole id, or a unique prefix of at least MIN_PREFIX characters."""
    if given and await store.get(given) is not None:
        return given
    if len(given) < MIN_PREFIX:
        raise Exit(USAGE, f"no stored session {given!r}; a prefix needs {MIN_PREFIX} characters or more ({LISTS_THEM})")
    found = await store.find_prefix(given, limit=SHOWN + 1)
    if not found:
        raise Exit(USAGE, f"no stored session {given!r} ({LISTS_THEM})")
    if len(found) > 1:
        more = " and more" if len(found) > SHOWN else ""
        named = "; ".join(describe(record) for record in found[:SHOWN])
        raise Exit(USAGE, f"session prefix {given!r} is ambiguous: {named}{more}; give more of the id")
    return found[0].id


async def latest_in(store: SessionStore, cwd: str) -> str:
    """The most recently updated session whose directory is `cwd` (never one of another directory)."""
    found = await store.list_sessions(cwd, limit=1)
    if not found:
        raise Exit(USAGE, f"no stored session in {cwd} to continue (`crow sessions` lists every directory's)")
    return found[0].id


def describe(record: SessionRecord) -> str:
    """One candidate on one line: id, title, directory, when it was last updated."""
    from crow.run.view import printable

    title = " ".join((record.title or "(untitled)").split())
    title = title if len(title) <= 40 else title[:39] + "…"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.updated_at))
    return printable(f"{record.id} ({title}, {record.cwd}, {when})")


async def in_store(config: Config, work: Callable[[SessionStore], Awaitable[T]]) -> T:
    """Run `work` against the store the config names, then close it; a store error is one line, status 3."""
    from crow.startup import store_location
    from crow_acp.store import StoreError, open_store

    store = open_store(config)
    try:
        return await work(store)
    except (sqlite3.Error, StoreError) as exc:
        raise Exit(SETUP, f"the session store failed ({store_location(config)}): {exc}") from exc
    finally:
        await store.close()


def pick(records: list[SessionRecord], cwd: str, stdin: TextIO, out: TextIO) -> str:
    """A numbered list on the terminal; the user's number chooses. Anything else chooses nothing."""
    if not stdin.isatty():
        raise Exit(USAGE, f"--resume without an id picks on a terminal; stdin is not one: give an id ({LISTS_THEM})")
    if not records:
        raise Exit(USAGE, f"no stored session in {cwd} to resume (`crow sessions` lists every directory's)")
    for number, record in enumerate(records, 1):
        out.write(f"{number:>3}  {describe(record)}\n")
    out.write(f"resume which session (1-{len(records)})? ")
    out.flush()
    answer = stdin.readline().strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(records):
        raise Exit(USAGE, f"no session chosen ({answer[:20]!r} is not a number from 1 to {len(records)})")
    return records[int(answer) - 1].id


def pick_in(config: Config, cwd: str) -> str:
    """`--resume` without an id: the session the user picks from `cwd`'s latest ones."""
    records = asyncio.run(in_store(config, lambda store: store.list_sessions(cwd, limit=SHOWN)))
    return pick(records, cwd, sys.stdin, sys.stderr)
