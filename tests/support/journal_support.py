"""Helpers for the change journal's tests (tests/timeline/test_watch*.py): a timeline on real files, the
oracle (a fresh full walk), a count of the full walks, and what the kernel says is watched and open."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from crow_acp.config.tables import CheckpointConfig
from crow_acp.timeline.timeline import Timeline
from crow_acp.timeline.tree import Manifest


class Walks:
    """Counts the scanner's full walks (the fallback) around the real one."""

    def __init__(self, line: Timeline) -> None:
        self.count, real = 0, line.scanner._full

        def counted(previous: Manifest | None) -> Manifest:
            self.count += 1
            return real(previous)

        line.scanner._full = counted  # type: ignore[method-assign]


def timeline(tmp_path: Path, work: Path, name: str = "s") -> Timeline:
    return Timeline(tmp_path / "home" / name, [str(work)], CheckpointConfig(), set())


def fresh(tmp_path: Path, work: Path) -> Manifest:
    """What a full walk of a new timeline finds now (its own home: it shares nothing with the one tested)."""
    oracle = Timeline(tmp_path / f"oracle{len(list(tmp_path.glob('oracle*')))}", [str(work)], CheckpointConfig(), set())
    try:
        oracle.snapshot()
        return oracle.last or {}
    finally:
        oracle.close()


def files(manifest: Manifest, work: Path) -> set[str]:
    return {path for path, entry in manifest[str(work)].items() if entry.kind == "f"}


def started(tmp_path: Path) -> tuple[Path, Timeline, Walks]:
    work = tmp_path / "work"
    for folder in ("a", "a/deep", "b"):
        (work / folder).mkdir(parents=True)
        for n in range(3):
            (work / folder / f"f{n}.txt").write_text(f"{folder} {n}\n")
    line = timeline(tmp_path, work)
    walks = Walks(line)
    line.snapshot()
    assert walks.count == 1 and line.scanner.watch is not None and line.scanner.watch.live
    return work, line, walks


def inotify_fds() -> int:
    """inotify fds open in this process (timelines other tests dropped unclosed are collected first)."""
    gc.collect()
    return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify" for fd in _fds())


def _fds() -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            os.readlink(f"/proc/self/fd/{fd}")
            out.append(fd)
        except OSError:
            pass  # the listing's own fd, closed meanwhile
    return out


def watched_inodes(line: Timeline) -> set[int]:
    """The inodes the kernel watches for this timeline, as /proc/self/fdinfo tells them."""
    journal = line.scanner.watch
    assert journal is not None and journal._ino is not None
    text = Path(f"/proc/self/fdinfo/{journal._ino.fileno()}").read_text()
    rows = [row.split() for row in text.splitlines() if row.startswith("inotify ")]
    return {int(part[4:], 16) for row in rows for part in row if part.startswith("ino:")}
