"""The checkpoints' change journal (crow_acp/timeline/watch.py) on real files and real inotify: after the first
walk, a checkpoint lists only what had events, and each one must equal what a fresh full walk finds (the
oracle: a new Timeline), with no second walk; a sandboxed command and a write through a hard link included."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from support.journal_support import files, fresh, started, timeline


def test_an_unchanged_tree_costs_no_listing_and_keeps_its_manifest(tmp_path, monkeypatch):
    work, line, walks = started(tmp_path)
    first, listed = line.last_digest, []
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda *a: listed.append(a) or real(*a))
    assert line.snapshot() == (first, "") and line.snapshot() == (first, "")
    assert walks.count == 1 and line.scanner.misses == 0 and listed == []
    (work / "a" / "f0.txt").write_text("one change\n")
    line.snapshot()
    assert len(listed) == 1 and line.last_digest != first  # its directory only


def test_a_change_a_create_and_a_delete_are_seen_without_a_walk(tmp_path):
    work, line, walks = started(tmp_path)
    (work / "a" / "deep" / "f1.txt").write_text("changed\n")
    (work / "b" / "new.txt").write_text("new\n")
    (work / "a" / "f0.txt").unlink()
    first = line.last_digest
    digest, _ = line.snapshot()
    assert line.last == fresh(tmp_path, work) and digest != first
    assert "a/f0.txt" not in files(line.last or {}, work) and "b/new.txt" in files(line.last or {}, work)
    assert walks.count == 1


def test_a_same_size_rewrite_within_the_mtime_tick_is_read_again(tmp_path):
    """The event names the file, so its stat (same size, and maybe the same coarse mtime) is not trusted."""
    work, line, walks = started(tmp_path)
    target = work / "b" / "f2.txt"
    before, old = os.stat(target), (line.last or {})[str(work)]["b/f2.txt"]
    target.write_text("b 9\n")  # the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    line.snapshot()
    new = (line.last or {})[str(work)]["b/f2.txt"]
    assert (new.size, new.mtime_ns, new.ino) == (old.size, old.mtime_ns, old.ino) and new.digest != old.digest
    assert line.objects.read(new.digest or "") == b"b 9\n"
    assert walks.count == 1


def test_renames_in_out_and_within_the_tree(tmp_path):
    work, line, walks = started(tmp_path)
    outside = tmp_path / "outside"
    (outside / "tree" / "sub").mkdir(parents=True)
    (outside / "tree" / "sub" / "in.txt").write_text("from outside\n")
    (outside / "file.txt").write_text("a file from outside\n")
    os.rename(outside / "tree", work / "b" / "came")  # a directory moved in
    os.rename(outside / "file.txt", work / "file.txt")  # a file moved in
    os.rename(work / "a" / "deep", outside / "deep")  # a directory moved out
    os.rename(work / "b" / "f0.txt", outside / "f0.txt")  # a file moved out
    line.snapshot()
    assert line.last == fresh(tmp_path, work)
    os.rename(work / "b" / "came", work / "a" / "moved")  # within the tree
    line.snapshot()
    assert line.last == fresh(tmp_path, work)
    (work / "a" / "moved" / "sub" / "in.txt").write_text("changed where it moved to\n")  # its new watches
    (outside / "deep" / "f0.txt").write_text("changed after it left\n")  # no longer ours
    line.snapshot()
    assert line.last == fresh(tmp_path, work)
    assert "a/moved/sub/in.txt" in files(line.last or {}, work) and "a/deep/f0.txt" not in files(line.last or {}, work)
    assert walks.count == 1


def test_a_new_directory_with_files_made_right_after_it_then_changed_between_two_checkpoints(tmp_path):
    work, line, walks = started(tmp_path)
    (work / "n1" / "n2" / "n3").mkdir(parents=True)
    for depth in ("n1", "n1/n2", "n1/n2/n3"):
        (work / depth / "x.txt").write_text(depth)
    line.snapshot()
    assert line.last == fresh(tmp_path, work) and "n1/n2/n3/x.txt" in files(line.last or {}, work)
    (work / "n1" / "n2" / "n3" / "x.txt").write_text("changed between two checkpoints\n")
    (work / "n1" / "n2" / "n3" / "y.txt").write_text("and one more\n")
    line.snapshot()
    assert line.last == fresh(tmp_path, work) and "n1/n2/n3/y.txt" in files(line.last or {}, work)
    assert walks.count == 1


def test_a_changed_gitignore_redoes_that_subtrees_decisions(tmp_path):
    work, line, walks = started(tmp_path)
    (work / "a" / "deep" / "x.log").write_text("log\n")
    line.snapshot()
    assert "a/deep/x.log" in files(line.last or {}, work)
    (work / "a" / ".gitignore").write_text("*.log\ndeep/f0.txt\n")
    line.snapshot()
    assert line.last == fresh(tmp_path, work)
    assert not {"a/deep/x.log", "a/deep/f0.txt"} & files(line.last or {}, work)
    (work / "a" / ".gitignore").unlink()
    line.snapshot()
    assert line.last == fresh(tmp_path, work) and "a/deep/x.log" in files(line.last or {}, work)
    assert walks.count == 1


def test_a_directory_replaced_by_a_file_and_back(tmp_path):
    work, line, walks = started(tmp_path)
    shutil.rmtree(work / "a" / "deep")
    (work / "a" / "deep").write_text("now a file\n")
    line.snapshot()
    assert line.last == fresh(tmp_path, work) and "a/deep/f0.txt" not in files(line.last or {}, work)
    (work / "a" / "deep").unlink()
    (work / "a" / "deep").mkdir()
    (work / "a" / "deep" / "again.txt").write_text("a directory again\n")
    line.snapshot()
    assert line.last == fresh(tmp_path, work) and "a/deep/again.txt" in files(line.last or {}, work)
    assert walks.count == 1


def test_a_write_through_a_hard_link_from_outside_is_seen(tmp_path):
    """inotify reports a write on the path written through: a link outside the tree raises no event here, so
    a directory holding a multiply-linked file is listed at every checkpoint."""
    work = tmp_path / "work"
    (work / "b").mkdir(parents=True)
    (work / "b" / "f1.txt").write_text("linked\n")
    outside = tmp_path / "elsewhere.txt"
    os.link(work / "b" / "f1.txt", outside)
    line = timeline(tmp_path, work)
    line.snapshot()
    with open(outside, "a") as out:
        out.write("appended through the other link\n")
    line.snapshot()
    assert line.last == fresh(tmp_path, work)
    assert (line.last or {})[str(work)]["b/f1.txt"].size == os.stat(outside).st_size


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)")
def test_a_command_in_a_bubblewrap_sandbox_is_seen_through_its_bind_mount(tmp_path):
    work, line, walks = started(tmp_path)
    script = f"cd {work} && echo sandboxed > a/f1.txt && mkdir -p s/t && echo new > s/t/u.txt && rm b/f2.txt"
    argv = ["bwrap", "--ro-bind", "/", "/", "--bind", str(work), str(work), "--dev", "/dev", "--proc", "/proc"]
    subprocess.run([*argv, "--unshare-all", "--die-with-parent", "sh", "-c", script], check=True, timeout=60)
    line.snapshot()
    assert line.last == fresh(tmp_path, work)
    assert "s/t/u.txt" in files(line.last or {}, work) and "b/f2.txt" not in files(line.last or {}, work)
    assert walks.count == 1
