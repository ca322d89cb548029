"""What the skills tests share: skill folders written to disk, and a user turn as a prompt runs it."""

from __future__ import annotations

from pathlib import Path

from crow_acp.api import SessionAccess
from crow_skills import SkillsHook


def make_skill(root: Path, folder: str, frontmatter: str | None = None, body: str = "Body.", **fields: str) -> Path:
    """root/folder/SKILL.md; `frontmatter` is written verbatim when given, else built from fields."""
    if frontmatter is None:
        fields = {"name": folder, "description": f"The {folder} skill.", **fields}
        frontmatter = "".join(f"{key}: {value}\n" for key, value in fields.items())
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}---\n{body}\n")
    return path


async def user_turn(hook: SkillsHook, session: SessionAccess, text: str) -> None:
    """What a prompt does before its first model call: record the user message, run pre_request."""
    session.add_message("user", text)
    await hook.pre_request(session, step=0)
    session.add_message("assistant", "ok")
