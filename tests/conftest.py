import sys

import pytest
import spawn

# This machine sets PYTHONDONTWRITEBYTECODE=1; without cached pycs every xdist worker rewrites and compiles
# the ~100 test modules again (about 3 CPU-seconds each). The caches are git-ignored.
sys.dont_write_bytecode = False


def pytest_sessionfinish(session, exitstatus):
    spawn.stop()  # an xdist worker may end without running atexit


def pytest_xdist_auto_num_workers(config):
    """-n auto: one worker more than cores, since about a third of the suite's time is spent waiting (timeouts,
    grace periods, signals), not computing. Measured on 2 cores: 158 s with 2 workers, 129 s with 3."""
    import os

    return (os.cpu_count() or 1) + 1


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def crow_home(tmp_path):
    home = tmp_path / "crow-home"
    home.mkdir()
    return home


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL server for the whole test session (CI installs it; see .ci/run)."""
    import os

    from postgres_server import PostgresServer, binaries

    if binaries() is None:
        message = "PostgreSQL is not installed (apt-get install postgresql)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    with PostgresServer() as server:
        yield server
