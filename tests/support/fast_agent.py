"""fast-agent (PyPI fast-agent-mcp) in a venv of its own, for tests/multi/test_foreign_fast_agent.py.

It needs Python >= 3.12 (crow's tests may run on 3.11), so it lives in a cache directory, installed once
(`.ci/run` runs this file first; a test that finds it missing installs it, under a lock):

    python tests/support/fast_agent.py      # prints the path of its `fast-agent` command
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

VERSION = "0.10.48"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "crow-tests" / f"fast-agent-{VERSION}"


def python312() -> str:
    """A Python 3.12 on this machine: pyenv's, else one on PATH (a pyenv shim of a version not selected fails)."""
    pyenv = glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.12.*" / "bin" / "python"))
    found = sorted(pyenv) or [path for path in [shutil.which("python3.12")] if path and "/shims/" not in path]
    if not found:
        raise RuntimeError("fast-agent needs Python 3.12: none in ~/.pyenv/versions or on PATH")
    return found[-1]


def ensure() -> Path:
    """The `fast-agent` command, installed first if it is not yet."""
    command = CACHE / "bin" / "fast-agent"
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / f"fast-agent-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install, whichever worker or CI step comes first
        if not command.exists():
            shutil.rmtree(CACHE, ignore_errors=True)
            subprocess.run([python312(), "-m", "venv", str(CACHE)], check=True)
            pip = [str(CACHE / "bin" / "pip"), "install", "-q", f"fast-agent-mcp=={VERSION}"]
            subprocess.run(pip, check=True, stdout=sys.stderr)
    return command


if __name__ == "__main__":
    print(ensure())
