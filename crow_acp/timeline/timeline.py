"""One session's checkpoints: the workspace before and after each user prompt, and what a rewind changes.

    $CROW_HOME/checkpoints/<session>/
        index.jsonl         [row of the user message, manifest before, manifest after, note] a line, appended
                            as each checkpoint is taken (the last line of a row wins; rewritten by a rewind)
        manifests/<sha256>  a Manifest as JSON (content-addressed: an unchanged tree adds nothing)
        objects/            file contents, one pack per checkpoint and its index (objects.py)
        rewind-journal.json a rewind under way (journal.py)

"Changed outside crow" means changed while no prompt of the session ran: between one prompt's after and
the next one's before, or since the last prompt's after. A rewind does not overwrite such a file silently.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..util.secrets import key_values
from .objects import Objects, write_atomically
from .restore import Change, changes_to, differing
from .tree import Entry, Manifest, Scanner, TooManyFiles
from .watch import Watch

if TYPE_CHECKING:
    from ..config.tables import CheckpointConfig

log = logging.getLogger(__name__)
INDEX = "index.jsonl"
KEPT_OPEN = 32
"""Timelines kept in memory (each holds its last manifest, the stat cache); `crow serve` has many sessions."""
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass
class Point:
    before: str | None
    """The manifest before the prompt ran (None: no checkpoint, `note` says why)."""
    after: str | None = None
    note: str = ""


@dataclass(frozen=True)
class FilePlan:
    changes: list[Change]
    """What the rewind changes, conflicts included."""
    outside: set[tuple[str, str]]
    """(root, path) changed outside crow since the checkpoint, among the changes."""
    not_kept: list[Change]
    """Files the checkpoint could not keep (over a limit): not restored."""


class Timeline:
    def __init__(self, directory: Path, roots: list[str], config: CheckpointConfig, skip: set[tuple[int, int]]):
        self.directory = directory
        (directory / "manifests").mkdir(parents=True, exist_ok=True, mode=0o700)
        self.objects = Objects(directory / "objects", config.max_file_bytes, config.max_session_bytes)
        self.scanner = Scanner(roots, self.objects.keep, skip, config.max_files, Watch())
        self.points = self._load_index()
        self.last: Manifest | None = None
        self.last_digest: str | None = None

    def close(self) -> None:
        """The change journal's watches and fd go (the session left memory, or this timeline did)."""
        if self.scanner.watch is not None:
            self.scanner.watch.close()

    # Taking checkpoints (on a worker thread: the session's lock is held meanwhile)
    def before(self, row: int) -> None:
        digest, note = self.snapshot()
        self.points[row] = Point(digest, None, note)
        self._append(row)

    def after(self, row: int) -> None:
        if (point := self.points.get(row)) is not None:
            point.after = self.snapshot()[0]
            self._append(row)

    def snapshot(self) -> tuple[str | None, str]:
        """The tree now as a stored manifest: (its digest, "") or (None, why there is none)."""
        if self.last is None:
            self._seed()
        self.objects.keys = key_values()
        try:
            manifest = self.scanner.scan(self.last)
        except (TooManyFiles, OSError) as exc:
            log.warning("no checkpoint: %s", exc)
            return None, str(exc)
        finally:
            self.objects.seal()  # the contents first: a manifest names only contents that exist
        if self.last is not None and self.scanner.misses == 0 and self.last_digest is not None:
            return self.last_digest, ""
        self.last, self.last_digest = manifest, self._save_manifest(manifest)
        return self.last_digest, ""

    # Planning a rewind
    def plan(self, row: int, now: Manifest) -> FilePlan:
        point = self.points[row]
        assert point.before is not None
        target = self.manifest(point.before)
        changes = changes_to(target, now)
        outside = self.changed_outside(row, now) & {(c.root, c.path) for c in changes}
        not_kept = [c for c in changes if c.want is not None and c.want.kind == "f" and c.want.digest is None]
        return FilePlan(changes, outside, not_kept)

    def changed_outside(self, row: int, now: Manifest) -> set[tuple[str, str]]:
        later = [self.points[r] for r in sorted(self.points) if r >= row]
        changed: set[tuple[str, str]] = set()
        for one, then in zip(later, [*later[1:], None], strict=True):
            if one.after is None:
                continue  # a prompt that never finished: what changed meanwhile counts as crow's
            upto = now if then is None else (self.manifest(then.before) if then.before else None)
            if upto is not None:
                changed |= differing(self.manifest(one.after), upto)
        return changed

    def settle(self, row: int | None) -> None:
        """After a rewind: the points from `row` on go with the history they belonged to (None: the history
        stays), and the tree as the rewind left it is what crow left (not a change made outside crow)."""
        if row is not None:
            self.points = {r: p for r, p in self.points.items() if r < row}
        digest = self.snapshot()[0]
        if self.points:
            self.points[max(self.points)].after = digest
        self._save_index()

    def manifest(self, digest: str) -> Manifest:
        rows = json.loads((self.directory / "manifests" / digest).read_bytes())
        return {root: {path: Entry.from_json(e) for path, e in entries.items()} for root, entries in rows.items()}

    def _seed(self) -> None:
        """The stat cache from the last stored manifest (a session opened again in a new process)."""
        for point in sorted(self.points.items(), reverse=True):
            if digest := point[1].after or point[1].before:
                self.last, self.last_digest = self.manifest(digest), digest
                return

    def _save_manifest(self, manifest: Manifest) -> str:
        rows = {root: {path: e.to_json() for path, e in entries.items()} for root, entries in manifest.items()}
        data = json.dumps(rows, separators=(",", ":")).encode()
        digest = hashlib.sha256(data).hexdigest()
        path = self.directory / "manifests" / digest
        if not path.exists():
            write_atomically(path, data)
        return digest

    def _load_index(self) -> dict[int, Point]:
        points: dict[int, Point] = {}
        try:
            lines = (self.directory / INDEX).read_bytes().splitlines()
        except FileNotFoundError:
            return points
        for line in lines:
            try:
                row, before, after, note = json.loads(line)
                points[int(row)] = Point(before, after, note)
            except (ValueError, TypeError) as exc:  # a line a kill cut short, or damage: the others still count
                log.warning("checkpoint index of %s: a line unreadable: %s", self.directory.name, exc)
        return points

    def _append(self, row: int) -> None:
        """One line per checkpoint: appended, not the whole index rewritten and renamed (two renames a prompt
        cost milliseconds on ext4, on every prompt's path)."""
        point = self.points[row]
        with open(self.directory / INDEX, "ab") as out:
            out.write(json.dumps([row, point.before, point.after, point.note]).encode() + b"\n")

    def _save_index(self) -> None:
        rows = b"".join(json.dumps([r, p.before, p.after, p.note]).encode() + b"\n" for r, p in self.points.items())
        write_atomically(self.directory / INDEX, rows)


class Checkpoints:
    """The timelines of an agent's sessions, under `home`/checkpoints."""

    def __init__(self, home: Path, config: CheckpointConfig) -> None:
        self.home, self.config = home, config
        self._open: dict[str, Timeline] = {}

    def of(self, session_id: str, roots: list[str]) -> Timeline | None:
        if not self.config.enabled:
            return None
        timeline = self._open.pop(session_id, None)  # taken out and put back: the most recent last
        if timeline is None:
            timeline = Timeline(self.dir(session_id), roots, self.config, self._skip())
        self._open[session_id] = timeline
        while len(self._open) > KEPT_OPEN:  # the least recently used goes; its disk state reloads when needed
            self._open.pop(next(iter(self._open))).close()
        timeline.scanner.roots = roots
        return timeline

    async def before_prompt(self, session_id: str, roots: list[str], row: int | None) -> None:
        """The workspace kept before the prompt's turn runs (`row` is its user message; None: no turn)."""
        await self._take(session_id, roots, row, before=True)

    async def after_prompt(self, session_id: str, roots: list[str], row: int | None) -> None:
        with anyio.CancelScope(shield=True):  # also after a cancel: what the turn left is crow's
            await self._take(session_id, roots, row, before=False)

    async def _take(self, session_id: str, roots: list[str], row: int | None, *, before: bool) -> None:
        # On a worker thread, while the session's lock is held: no other prompt of the session runs meanwhile.
        if row is None or (timeline := self.of(session_id, roots)) is None:
            return
        try:
            await anyio.to_thread.run_sync(timeline.before if before else timeline.after, row)
        except OSError as exc:  # $CROW_HOME full or unwritable, a root gone: the turn runs without a checkpoint
            log.warning("checkpoint of session %s failed: %s", session_id, exc)

    def close(self, session_id: str) -> None:
        """The session left memory: its timeline goes too (its files stay; it reloads when needed)."""
        if (timeline := self._open.pop(session_id, None)) is not None:
            timeline.close()

    def dir(self, session_id: str) -> Path:
        if not SESSION_ID.fullmatch(session_id):  # a name, never a path: nothing outside checkpoints/
            raise ValueError(f"not a session id: {session_id[:40]!r}")
        return self.home / "checkpoints" / session_id

    def delete(self, session_id: str) -> None:
        """The session's checkpoints, gone with the session (session/delete)."""
        self.close(session_id)
        if SESSION_ID.fullmatch(session_id):
            shutil.rmtree(self.dir(session_id), ignore_errors=True)

    def _skip(self) -> set[tuple[int, int]]:
        try:
            st = os.stat(self.home)
        except OSError:
            return set()
        return {(st.st_dev, st.st_ino)}
