"""Issue 31 item 1 figure: what a checkpoint costs when nothing changed, on a 5,000-file repository.

    .venv/bin/python benchmarks/checkpoint.py [FILES]

A tree of FILES small files (default 5,000) in 50 directories, with a .gitignore that ignores a build
directory of 500 more, is checkpointed once (every file read and stored), then 50 times unchanged: the
figure is the median and the worst of those, each the wall time of Timeline.before (the scan, the
stat cache's check, the index written), and its CPU time (user + system), which a busy machine does not
inflate, and a floor in the same run: os.walk and one lstat per file, which any stat cache must pay. The goal
is <= 20 ms.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
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


def floor(root: str) -> float:
    """One lstat per kept file and a listing per directory, nothing else: what no stat cache can go under."""
    start = time.perf_counter()
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "build"]
        for name in names:
            os.stat(os.path.join(folder, name), follow_symlinks=False)
    return time.perf_counter() - start


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as home:
        tree(Path(work), files)
        timeline = Timeline(Path(home) / "s", [work], CheckpointConfig(), set())
        start = time.perf_counter()
        timeline.before(1)
        first = time.perf_counter() - start
        times, cpu, floors = [], [], []
        for row in range(2, 52):
            floors.append(floor(work))
            start, start_cpu = time.perf_counter(), time.process_time()
            timeline.before(row)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        kept = sum(len(entries) for entries in (timeline.last or {}).values())
        print(f"{files} files ({kept} entries kept, build/ ignored): first checkpoint {first * 1000:.1f} ms")
        print(f"unchanged: median {statistics.median(times) * 1000:.2f} ms, worst {max(times) * 1000:.2f} ms wall")
        print(f"unchanged: median {statistics.median(cpu) * 1000:.2f} ms CPU (user + system: the machine's load aside)")
        print(f"floor (os.walk + one lstat per file, same run): median {statistics.median(floors) * 1000:.2f} ms wall")


if __name__ == "__main__":
    main()
