"""Issue 31 item 1 figure: what a checkpoint costs when nothing changed, on a 5,000-file repository.

    .venv/bin/python benchmarks/checkpoint.py [FILES]

A tree of FILES small files (default 5,000) in 50 directories, with a .gitignore that ignores a build
directory of 500 more, is checkpointed once (every file read and stored), then 50 times unchanged: the
figure is the median and the worst of those, each the wall time of Timeline.before (the scan, the
stat cache's check, the index written). The goal is <= 20 ms.
"""

from __future__ import annotations

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


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as home:
        tree(Path(work), files)
        timeline = Timeline(Path(home) / "s", [work], CheckpointConfig(), set())
        start = time.perf_counter()
        timeline.before(1)
        first = time.perf_counter() - start
        times = []
        for row in range(2, 52):
            start = time.perf_counter()
            timeline.before(row)
            times.append(time.perf_counter() - start)
        kept = sum(len(entries) for entries in (timeline.last or {}).values())
        print(f"{files} files ({kept} entries kept, build/ ignored): first checkpoint {first * 1000:.1f} ms")
        print(f"unchanged: median {statistics.median(times) * 1000:.2f} ms, worst {max(times) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
