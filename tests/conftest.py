import pytest
import spawn


def pytest_sessionfinish(session, exitstatus):
    spawn.stop()  # an xdist worker may end without running atexit


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
