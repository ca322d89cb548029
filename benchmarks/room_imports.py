"""The rooms of one package: modules per room, import arrows between its modules, and its floors.

usage: python benchmarks/room_imports.py [PACKAGE_DIR]   (default crow_acp/acp)

Counts every import of one module of PACKAGE_DIR by another (module level, function-local and
TYPE_CHECKING ones alike), as arrows between modules (a package counts as its __init__). Floors are
the longest chain of arrows plus one, over the graph with cycles (if any) reported, not counted.
"""

from __future__ import annotations

import ast
import collections
import pathlib
import sys


def module_name(root: pathlib.Path, path: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported(tree: ast.AST, mod: str, is_pkg: bool) -> set[str]:
    out: set[str] = set()
    here = mod.split(".") if is_pkg else mod.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            out.add(stem)
            out.update(f"{stem}.{alias.name}" for alias in node.names)
    return out


def graph(package: pathlib.Path) -> dict[str, set[str]]:
    root = package.parent
    while (root / "__init__.py").exists():
        root = root.parent
    files = {module_name(root, p): p for p in package.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for mod, path in files.items():
        tree = ast.parse(path.read_text())
        targets = imported(tree, mod, path.name == "__init__.py")
        edges[mod] = {t for t in targets if t in files and t != mod}
    return edges


def floors(edges: dict[str, set[str]]) -> int:
    depth: dict[str, int] = {}

    def walk(mod: str, seen: frozenset[str]) -> int:
        if mod in depth:
            return depth[mod]
        below = [walk(t, seen | {mod}) for t in edges[mod] if t not in seen]
        depth[mod] = 1 + max(below, default=0)
        return depth[mod]

    return max((walk(m, frozenset()) for m in edges), default=0)


def main() -> None:
    package = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "crow_acp/acp").resolve()
    edges = graph(package)
    rooms: collections.Counter[str] = collections.Counter()
    for path in package.rglob("*.py"):
        if path.name != "__init__.py":
            rooms[str(path.parent.relative_to(package.parent))] += 1
    for room, count in sorted(rooms.items()):
        print(f"{room}: {count} modules")
    arrows = sum(len(t) for t in edges.values())
    widest = max(rooms.values(), default=0)
    print(
        f"ROOMS: rooms={len(rooms)} modules={sum(rooms.values())} widest={widest} "
        f"arrows={arrows} floors={floors(edges)}"
    )


if __name__ == "__main__":
    main()
