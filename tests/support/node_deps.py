"""The TypeScript ACP SDK (tests/ts_client/node_modules), installed from its lock file the first time a test
needs it (zod_check.py, test_ts_client.py), once: xdist workers wait on a file lock while the first installs.
So the README's one test command is the whole story on a fresh clone; it runs offline after that."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

CLIENT = Path(__file__).parents[1] / "ts_client"
INSTALLED = CLIENT / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"


def ensure_node_modules() -> Path:
    """tests/ts_client with its node_modules; `npm ci` first if they are missing (or half-installed)."""
    if INSTALLED.exists():
        return CLIENT
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), "node and npm are needed (apt-get install nodejs npm)"
    with open(CLIENT / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install, whichever worker comes first
        if not INSTALLED.exists():
            command = [npm, "ci", "--prefix", str(CLIENT), "--no-audit", "--no-fund"]
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"npm ci in {CLIENT} failed: {done.stderr[-4000:]}"
    return CLIENT
