"""The checkpoints themselves (crow_acp/timeline), on real files: the stat cache, git's ignore rules, a damaged
pack, and a directory swapped for a symlink between the plan and the restore (never written through)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crow_acp.config.tables import CheckpointConfig
from crow_acp.timeline.restore import apply, changes_to
from crow_acp.timeline.timeline import Checkpoints, Timeline


def timeline(tmp_path: Path, work: Path, **limits: int) -> Timeline:
    return Timeline(tmp_path / "home" / "s", [str(work)], CheckpointConfig(**limits), set())


def test_an_unchanged_tree_reads_no_file_and_adds_no_manifest(tmp_path):
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    for n in range(50):
        (work / "pkg" / f"m{n}.py").write_text(f"v = {n}\n")
    line = timeline(tmp_path, work)
    line.before(1)
    manifests = sorted((line.directory / "manifests").iterdir())
    line.before(2)
    assert line.scanner.misses == 0 and sorted((line.directory / "manifests").iterdir()) == manifests
    assert line.points[1].before == line.points[2].before
    (work / "pkg" / "m7.py").write_text("v = 'changed'\n")
    line.before(3)
    assert line.scanner.misses == 1 and line.points[3].before != line.points[2].before


def test_the_deepest_gitignore_decides_and_an_ignored_directory_is_not_entered(tmp_path):
    work = tmp_path / "work"
    (work / "src" / "gen").mkdir(parents=True)
    (work / ".gitignore").write_text("*.log\ngen/\n")
    (work / "src" / ".gitignore").write_text("!keep.log\n")
    for path in ("a.log", "src/keep.log", "src/other.log", "src/gen/out.c", "src/main.c"):
        (work / path).write_text(path)
    line = timeline(tmp_path, work)
    line.before(1)
    kept = {p for p, e in (line.last or {})[str(work)].items() if e.kind == "f"}
    assert kept == {".gitignore", "src/.gitignore", "src/keep.log", "src/main.c"}


def test_a_damaged_pack_is_an_error_for_that_file_not_a_wrong_content(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("original\n")
    line = timeline(tmp_path, work)
    line.before(1)
    pack = next((line.directory / "objects").glob("*.pack"))
    pack.write_bytes(pack.read_bytes().replace(b"original", b"tampered"))
    (work / "a.txt").write_text("later\n")
    line.snapshot()
    changes = changes_to(line.manifest(line.points[1].before or ""), line.last or {})
    failed = apply(changes, line.objects.read)
    assert [why for _, why in failed] == ["the checkpoint's copy of this file is damaged (" + why_digest(line) + ")"]
    assert (work / "a.txt").read_text() == "later\n"


def why_digest(line: Timeline) -> str:
    return next(iter(line.objects.index))[:12]


def test_a_directory_swapped_for_a_link_after_the_plan_is_never_written_through(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    outside.mkdir()
    (work / "sub" / "f.txt").write_text("orig\n")
    line = timeline(tmp_path, work)
    line.before(1)
    (work / "sub" / "f.txt").write_text("changed\n")
    line.snapshot()
    changes = changes_to(line.manifest(line.points[1].before or ""), line.last or {})
    assert [c.path for c in changes] == ["sub/f.txt"]
    os.rename(work / "sub", tmp_path / "moved")  # the swap, between the check and the use
    (work / "sub").symlink_to(outside)
    failed = apply(changes, line.objects.read)
    assert len(failed) == 1 and list(outside.iterdir()) == []


def test_a_file_over_the_limit_and_the_session_limit_are_not_kept(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "big.bin").write_bytes(b"x" * 2000)
    (work / "one.txt").write_bytes(b"1" * 600)
    (work / "two.txt").write_bytes(b"2" * 600)
    line = timeline(tmp_path, work, max_file_bytes=1000, max_session_bytes=1000)
    line.before(1)
    entries = (line.last or {})[str(work)]
    assert entries["big.bin"].digest is None and "max_file_bytes" in entries["big.bin"].note
    assert sorted(p for p in ("one.txt", "two.txt") if entries[p].digest is None) == ["two.txt"]
    assert "max_session_bytes" in entries["two.txt"].note


def test_a_session_id_is_a_name_never_a_path(tmp_path):
    checkpoints = Checkpoints(tmp_path, CheckpointConfig())
    with pytest.raises(ValueError, match="not a session id"):
        checkpoints.dir("../../etc")
    (tmp_path / "keep").mkdir()
    checkpoints.delete("../keep")
    assert (tmp_path / "keep").exists()


def test_a_file_holding_crows_key_is_not_kept(tmp_path, monkeypatch):
    key = "sk-checkpoint-" + "7" * 24
    monkeypatch.setenv("OPENAI_API_KEY", key)
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text(f"OPENAI_API_KEY={key}\n")
    (work / "plain.txt").write_text("nothing secret\n")
    line = timeline(tmp_path, work)
    line.before(1)
    entries = (line.last or {})[str(work)]
    assert entries[".env"].digest is None and "keys" in entries[".env"].note
    assert entries["plain.txt"].digest is not None
    assert key.encode() not in b"".join(p.read_bytes() for p in line.directory.rglob("*") if p.is_file())


def test_past_max_files_a_prompt_gets_no_checkpoint_and_says_why(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for n in range(5):
        (work / f"f{n}.txt").write_text(str(n))
    line = timeline(tmp_path, work, max_files=3)
    line.before(1)
    assert line.points[1].before is None and "max_files" in line.points[1].note
