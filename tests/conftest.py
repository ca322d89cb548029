import sys

import pytest
from hypothesis import HealthCheck, settings
from support import spawn

# Hypothesis's own timing checks (a deadline per example, "input generation is slow") time the machine, not
# crow: CI's two cores may be busy, and a property holds or fails whatever the speed.
settings.register_profile("loaded machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loaded machine")

# This machine sets PYTHONDONTWRITEBYTECODE=1; without cached pycs every xdist worker rewrites and compiles
# the ~100 test modules again (about 3 CPU-seconds each). The caches are git-ignored.
sys.dont_write_bytecode = False
PACKAGES = ("crow", "crow_acp", "crow_prompt", "crow_skills", "crow_compact")


def pytest_configure(config):
    """Compile crow's own modules once, before the workers start: with no pycs (an editable install under
    PYTHONDONTWRITEBYTECODE), every fork server and every crow the tests exec compiled them again; on a
    fresh clone that cost ~15 s of the suite. A no-op when they are compiled already."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    import compileall
    import importlib.util
    from pathlib import Path

    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            compileall.compile_dir(Path(spec.origin).parent, quiet=1)


def pytest_sessionfinish(session, exitstatus):
    spawn.stop()  # an xdist worker may end without running atexit


def pytest_xdist_auto_num_workers(config):
    """-n auto: two workers per core, at most four more than cores. Most test processes come forked from a
    warm server (tests/README.md), so a test computes little and spends much of its time waiting on crow,
    the model and timeouts; the waiting tests are a fixed set, so more cores need fewer extra workers.
    Measured on 2 cores (quiet): 97 s with 3 workers, 79 s with 4."""
    import os

    cores = os.cpu_count() or 1
    return min(2 * cores, cores + 4)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def crow_home(tmp_path):
    home = tmp_path / "crow-home"
    home.mkdir(mode=0o700)  # as crow makes it: a looser one is tightened, with a warning on stderr
    return home


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL server for the whole test session (CI installs it; see .ci/run)."""
    import os

    from support.postgres_server import PostgresServer, binaries

    if binaries() is None:
        message = "PostgreSQL is not installed (apt-get install postgresql)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    with PostgresServer() as server:
        yield server
