"""Every room of crow_acp has an index: its __init__ docstring names each module and sub-room in it.

A newcomer opens a room's __init__ to find where a change goes; a module the index leaves out is a
module nobody finds. The check reads the source tree, so a module added without its line fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "crow_acp"
ROOMS = sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts and p.parent != PACKAGE)


def members(room: Path) -> list[str]:
    """The room's modules (name.py) and sub-rooms (name/), __init__ and __main__ left out."""
    modules = [p.name for p in room.glob("*.py") if p.stem not in ("__init__", "__main__")]
    subrooms = [f"{p.name}/" for p in room.iterdir() if (p / "__init__.py").exists()]
    return sorted(modules + subrooms)


def unnamed(room: Path) -> list[str]:
    index = ast.get_docstring(ast.parse((room / "__init__.py").read_text())) or ""
    return [name for name in members(room) if name not in index]


@pytest.mark.parametrize("room", ROOMS, ids=lambda room: str(room.relative_to(PACKAGE.parent)))
def test_the_index_names_every_module_of_the_room(room: Path) -> None:
    assert unnamed(room) == [], f"{room.relative_to(PACKAGE.parent)}/__init__.py does not name these"


def test_a_module_left_out_of_an_index_is_found(tmp_path: Path) -> None:
    room = tmp_path / "room"
    (room / "inner").mkdir(parents=True)
    (room / "__init__.py").write_text('"""The room.\n\n    named.py   a module the index names\n"""\n')
    (room / "inner" / "__init__.py").write_text("")
    for name in ("named.py", "forgotten.py", "__main__.py"):
        (room / name).write_text("")
    assert unnamed(room) == ["forgotten.py", "inner/"]
