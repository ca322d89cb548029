"""Finding skills: the search directories, in precedence order, and what was found in them."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from crow_acp.config import crow_home

from .skill import Skill, SkillError, load_skill

log = logging.getLogger(__name__)

SkillsDir = str | Path | Iterable[str | Path]


@dataclass(frozen=True)
class SearchDir:
    path: Path
    scope: str
    """"user", "project", or "custom" for a skills_dir given in Python."""


@dataclass
class Discovery:
    skills: dict[str, Skill] = field(default_factory=dict)
    """The skills in use, by name, sorted."""
    shadowed: list[tuple[Skill, Skill]] = field(default_factory=list)
    """(loser, winner) pairs of a name clash."""
    warnings: list[str] = field(default_factory=list)
    """One line per skill that was skipped: the file and the problem."""
    dirs: list[SearchDir] = field(default_factory=list)


def search_dirs(cwd: Path, skills_dir: SkillsDir | None = None, home: Path | None = None) -> list[SearchDir]:
    """Lowest precedence first, so a later directory wins a name clash: project over user.

    Within a scope crow's own folder beats the shared `.agents` one. A relative skills_dir is
    taken relative to the session's cwd.
    """
    if skills_dir is not None:
        given = [skills_dir] if isinstance(skills_dir, (str, Path)) else list(skills_dir)
        return [SearchDir(cwd / Path(path).expanduser(), "custom") for path in given]
    home = home or crow_home()
    return [
        SearchDir(Path.home() / ".agents" / "skills", "user"),
        SearchDir(home / "skills", "user"),
        SearchDir(cwd / ".agents" / "skills", "project"),
        SearchDir(cwd / ".crow" / "skills", "project"),
    ]


def discover(dirs: list[SearchDir], roots: tuple[str, ...] | None = None) -> Discovery:
    """Load every skill under `dirs`; a broken one becomes a warning, never an exception.

    With `roots` (the session's), a project skill's SKILL.md must lie inside them: one that a
    symlink leads out of the workspace is skipped with a warning, as read_file would refuse it."""
    found = Discovery(dirs=dirs)
    seen: set[Path] = set()
    for directory in dirs:
        if (real := directory.path.resolve()) in seen:
            continue  # the cwd is the home directory: ~/.agents/skills is listed twice
        seen.add(real)
        for path in _skill_files(directory.path, found.warnings):
            try:
                skill = load_skill(path, directory.scope, roots if directory.scope == "project" else None)
            except SkillError as exc:
                log.warning("skipping skill: %s", exc)
                found.warnings.append(str(exc))
                continue
            if old := found.skills.get(skill.name):
                found.shadowed.append((old, skill))
            found.skills[skill.name] = skill
    found.skills = dict(sorted(found.skills.items()))
    return found


def _skill_files(directory: Path, warnings: list[str]) -> list[Path]:
    """SKILL.md of every direct sub-folder; hidden folders and folders without one are not skills."""
    try:
        children = sorted(directory.iterdir()) if directory.is_dir() else []
    except OSError as exc:
        warnings.append(f"{directory}: cannot list skills: {exc.strerror or exc}")
        return []
    skills = [child for child in children if not child.name.startswith(".")]
    return [child / "SKILL.md" for child in skills if os.path.lexists(child / "SKILL.md")]
