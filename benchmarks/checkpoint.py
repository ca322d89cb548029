"""Issue 31 item 1 figure: what a checkpoint costs when nothing changed, on a 5,000-file repository.

    .venv/bin/python benchmarks/checkpoint.py [FILES]

A tree of FILES small files (default 5,000) in 50 directories, with a .gitignore that ignores a build
directory of 500 more. Each figure is Timeline.before (the scan, the index line written), as wall time and as
CPU time (user + system of this process, which a busy machine does not inflate):
- cold: the first checkpoint of a new Timeline: the full walk, every file read and stored, the change
  journal's watches added (one per directory);
- unchanged: the 2nd to 51st checkpoints of that live Timeline with nothing changed (the goal: <= 20 ms);
  the journal is drained and, with no event, the last manifest stands;
- one file changed: 20 more checkpoints, each after one file was rewritten: its directory is listed again;
- walk floor: os.walk and one lstat per kept file, in the same run, which any walk (stat cache or not) pays;
  what every unchanged checkpoint cost before the journal.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from crow_acp.config.tables import CheckpointConfig
from crow_acp.timeline.timeline import Timeline


def tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"pkg{n % 50}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{n}.py").write_text(f"VALUE = {n}\n")
    (root / "build").mkdir()
    for n in range(500):
        (root / "build" / f"out{n}.o").write_bytes(b"\0" * 64)
    (root / ".gitignore").write_text("build/\n*.pyc\n")


def floor(root: str) -> None:
    """One lstat per kept file and a listing per directory, nothing else."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "build"]
        for name in names:
            os.stat(os.path.join(folder, name), follow_symlinks=False)


def timed(run: Callable[[], None]) -> tuple[float, float]:
    start, start_cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - start, time.process_time() - start_cpu


def line(label: str, rows: list[tuple[float, float]]) -> str:
    wall, cpu = [r[0] * 1000 for r in rows], [r[1] * 1000 for r in rows]
    return (
        f"{label:<16} median {statistics.median(wall):7.2f} ms wall (worst {max(wall):7.2f}),"
        f" median {statistics.median(cpu):7.2f} ms CPU (worst {max(cpu):7.2f}), n={len(rows)}"
    )


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as home:
        tree(Path(work), files)
        timeline = Timeline(Path(home) / "s", [work], CheckpointConfig(), set())
        cold = [timed(lambda: timeline.before(1))]
        journal = timeline.scanner.watch
        unchanged, floors, changed = [], [], []
        for row in range(2, 52):
            floors.append(timed(lambda: floor(work)))
            unchanged.append(timed(lambda row=row: timeline.before(row)))
        for n in range(20):
            Path(work, f"pkg{n}", f"mod{n}.py").write_text(f"VALUE = {n} + 1\n")
            changed.append(timed(lambda n=n: timeline.before(100 + n)))
        kept = sum(len(entries) for entries in (timeline.last or {}).values())
        state = "on" if journal is not None and journal.live else f"off ({journal.off if journal else 'none'})"
        print(f"{files} files ({kept} entries kept, build/ ignored), change journal {state}")
        for label, rows in (("cold", cold), ("unchanged", unchanged), ("one file changed", changed)):
            print(line(label, rows))
        print(line("walk floor", floors))
        timeline.close()


if __name__ == "__main__":
    main()
