"""The change journal against the full walk on random sequences of changes (seeded, so a failure replays):
files written, removed, renamed; directories made, removed, moved in, out and within; .gitignore files
written and removed; links made. After each checkpoint the manifest must equal a fresh full walk's, and the
journal must have needed no walk but the first."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from support.journal_support import Walks, fresh, timeline

PATTERNS = ["*.log\n", "d1/\n", "m*\n", "x.txt\n", "!keep.log\n*.log\n"]


def change(rng: random.Random, work: Path, outside: Path) -> None:
    dirs = [work, *(p for p in work.rglob("*") if p.is_dir() and not p.is_symlink())]
    found = [p for p in work.rglob("*") if p.is_file() and not p.is_symlink()]
    here, op = (
        rng.choice(dirs),
        rng.choice(["file", "file", "write", "rm", "mkdir", "rmdir", "mv", "in", "out", "ignore"]),
    )
    try:
        if op == "file":
            (here / f"f{rng.randrange(30)}.{rng.choice(['txt', 'log'])}").write_text(str(rng.random()))
        elif op == "write" and found:
            rng.choice(found).write_text(str(rng.random()))
        elif op == "rm" and found:
            rng.choice(found).unlink()
        elif op == "mkdir":
            (here / f"d{rng.randrange(10)}").mkdir(exist_ok=True)
            (here / f"d{rng.randrange(10)}" / "x.txt").write_text("x")
        elif op == "rmdir" and here != work:
            shutil.rmtree(here)
        elif op == "mv":
            to = rng.choice(dirs)
            source = rng.choice(found) if found and rng.random() < 0.5 else here
            if source != work and not str(to).startswith(str(source)):
                os.rename(source, to / f"m{rng.randrange(20)}")
        elif op == "in":
            made = outside / f"o{rng.randrange(10**6)}"
            (made / "y").mkdir(parents=True)
            (made / "y" / "z.txt").write_text("z")
            os.rename(made, here / made.name)
        elif op == "out" and here != work:
            os.rename(here, outside / f"gone{rng.randrange(10**6)}")
        elif op == "ignore" and (here / ".gitignore").exists():
            (here / ".gitignore").unlink()
        elif op == "ignore":
            (here / ".gitignore").write_text(rng.choice(PATTERNS))
    except OSError:
        pass  # a random rename onto a non-empty directory, say: not a change, and not the test's business


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_changes_give_what_a_full_walk_gives(tmp_path, seed):
    rng = random.Random(seed)
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "l").symlink_to(outside, target_is_directory=True)
    line = timeline(tmp_path, work)
    walks = Walks(line)
    line.snapshot()
    for step in range(60):
        for _ in range(rng.randrange(1, 5)):
            change(rng, work, outside)
        line.snapshot()
        assert line.last == fresh(tmp_path, work), f"seed {seed}, step {step}"
    assert walks.count == 1
    line.close()
