"""The change journal fails closed (crow_acp/timeline/watch.py): an overflow, a watch the kernel dropped, a
watch refused, a filesystem not local, too many journals open each mean a full walk, still right; a symlinked
directory is never watched through; the inotify fd goes with the timeline (close, delete, eviction)."""

from __future__ import annotations

import errno
import gc
import os
from pathlib import Path

from inotify_simple import Event, INotify, flags
from support.journal_support import Walks, files, fresh, inotify_fds, started, timeline, watched_inodes

from crow_acp.config.tables import CheckpointConfig
from crow_acp.timeline import watch
from crow_acp.timeline.timeline import Checkpoints


def test_an_overflow_forces_a_full_walk(tmp_path):
    work, line, walks = started(tmp_path)
    journal = line.scanner.watch
    assert journal is not None
    real = journal._read
    journal.read = lambda: [*real(), Event(-1, flags.Q_OVERFLOW, 0, "")]  # as the kernel says it: wd -1
    (work / "b" / "lost.txt").write_text("an event the overflow lost\n")
    line.snapshot()
    assert walks.count == 2 and line.last == fresh(tmp_path, work)
    journal.read = None
    (work / "b" / "later.txt").write_text("after the walk, the journal again\n")
    line.snapshot()
    assert walks.count == 2 and journal.live and line.last == fresh(tmp_path, work)


def test_a_watch_dropped_by_the_kernel_forces_a_full_walk(tmp_path):
    work, line, walks = started(tmp_path)
    journal = line.scanner.watch
    assert journal is not None
    real, wd = journal._read, journal._by_dir[(str(work), "b")]
    journal.read = lambda: [*real(), Event(wd, flags.IGNORED, 0, "")]
    line.snapshot()
    assert walks.count == 2 and line.last == fresh(tmp_path, work)


def test_when_watches_cannot_be_added_every_checkpoint_is_a_full_walk(tmp_path, monkeypatch):
    def refused(self: INotify, path: str, mask: int) -> int:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(INotify, "add_watch", refused)
    baseline = inotify_fds()
    work, line = tmp_path / "work", None
    (work / "a").mkdir(parents=True)
    (work / "a" / "f.txt").write_text("one\n")
    line = timeline(tmp_path, work)
    walks = Walks(line)
    line.snapshot()
    journal = line.scanner.watch
    assert journal is not None and not journal.live and "watch limit" in journal.off
    assert inotify_fds() == baseline  # what it could not use, it let go
    (work / "a" / "f.txt").write_text("two\n")
    line.snapshot()
    assert walks.count == 2 and line.last == fresh(tmp_path, work)


def test_a_directory_not_on_a_local_filesystem_turns_the_journal_off(tmp_path, monkeypatch):
    monkeypatch.setattr(watch, "_local", lambda fd: False)
    work = tmp_path / "work"
    work.mkdir()
    line = timeline(tmp_path, work)
    walks = Walks(line)
    line.snapshot()
    (work / "new.txt").write_text("seen by the walk\n")
    line.snapshot()
    assert line.scanner.watch is not None and "not on a local filesystem" in line.scanner.watch.off
    assert walks.count == 2 and "new.txt" in files(line.last or {}, work)


def test_the_tests_filesystem_is_local_and_procfs_is_not(tmp_path):
    for path, local in ((tmp_path, True), (Path("/proc"), False)):  # the others' journals rely on the first
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            assert watch._local(fd) is local
        finally:
            os.close(fd)


def test_a_symlinked_directory_is_never_watched_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not ours\n")
    work = tmp_path / "work"
    (work / "real").mkdir(parents=True)
    (work / "link").symlink_to(outside, target_is_directory=True)
    line = timeline(tmp_path, work)
    walks = Walks(line)
    line.snapshot()
    inodes = watched_inodes(line)
    assert os.stat(outside).st_ino not in inodes
    assert inodes == {os.stat(work).st_ino, os.stat(work / "real").st_ino}
    (outside / "secret.txt").write_text("changed, and still not ours\n")
    (outside / "more.txt").write_text("more\n")
    line.snapshot()
    assert line.last == fresh(tmp_path, work) and (line.last or {})[str(work)]["link"].kind == "l"
    assert walks.count == 1 and not any(p.startswith("link/") for p in (line.last or {})[str(work)])


def test_the_journals_fd_is_released_on_close_delete_and_eviction(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    baseline = inotify_fds()
    line = timeline(tmp_path, work)
    line.snapshot()
    assert inotify_fds() == baseline + 1
    line.close()
    assert inotify_fds() == baseline
    checkpoints = Checkpoints(tmp_path / "home", CheckpointConfig())
    for sid in ("s1", "s2", "s3"):
        one = checkpoints.of(sid, [str(work)])
        assert one is not None
        one.snapshot()
    assert inotify_fds() == baseline + 3
    checkpoints.close("s1")
    checkpoints.delete("s2")
    assert inotify_fds() == baseline + 1
    monkeypatch.setattr("crow_acp.timeline.timeline.KEPT_OPEN", 1)
    two = checkpoints.of("s4", [str(work)])
    assert two is not None
    two.snapshot()
    assert inotify_fds() == baseline + 1  # s3 went out of memory, and its journal with it
    checkpoints.close("s4")
    assert inotify_fds() == baseline


def test_past_max_open_journals_a_timeline_walks_and_is_still_right(tmp_path, monkeypatch):
    gc.collect()  # timelines other tests of this worker dropped unclosed
    monkeypatch.setattr(watch, "MAX_OPEN", len(watch._opened) + 1)
    work = tmp_path / "work"
    work.mkdir()
    first, second = timeline(tmp_path, work, "one"), timeline(tmp_path, work, "two")
    first.snapshot()
    second.snapshot()
    assert first.scanner.watch is not None and first.scanner.watch.live
    assert second.scanner.watch is not None and "journals open" in second.scanner.watch.off
    (work / "x.txt").write_text("x\n")
    first.snapshot()
    second.snapshot()
    assert first.last == second.last == fresh(tmp_path, work)
    first.close()
    second.close()
