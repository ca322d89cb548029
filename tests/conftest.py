import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def crow_home(tmp_path):
    home = tmp_path / "crow-home"
    home.mkdir()
    return home
