"""The text of /skills: every skill with its source and status, then the warnings."""

from __future__ import annotations

from .discover import Discovery

DESCRIPTION_WIDTH = 120


def listing(found: Discovery, loaded: set[str]) -> str:
    lines = [f"**Skills**: {len(found.skills)} available, {len(found.warnings)} skipped with a warning", ""]
    for skill in found.skills.values():
        status = "loaded in this session" if skill.name in loaded else "available"
        triggers = f"; triggers: {', '.join(skill.triggers)}" if skill.triggers else ""
        lines.append(f"- `{skill.name}` ({skill.source}, {status}{triggers}): {_short(skill.description)}")
        lines.append(f"  {skill.path}")
    for loser, winner in found.shadowed:
        lines.append(f"- `{loser.name}` ({loser.source}, shadowed by the {winner.source} skill of that name)")
        lines.append(f"  {loser.path}")
    if found.warnings:
        lines += ["", "**Warnings**", *(f"- {warning}" for warning in found.warnings)]
    searched = ", ".join(f"{d.path} ({d.scope}{'' if d.path.is_dir() else ', missing'})" for d in found.dirs)
    lines += ["", f"Searched, lowest precedence first: {searched}"]
    return "\n".join(lines)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_WIDTH else text[: DESCRIPTION_WIDTH - 3] + "..."
