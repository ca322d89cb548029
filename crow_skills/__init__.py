"""crow_skills: Agent Skills (agentskills.io) with progressive disclosure and deterministic triggers.

    default_skills(skills_dir=None, *, home=None)

returns CrowCallbacks for begin_session and pre_request:
- begin_session discovers the skills for the session's cwd, stores the catalog (name,
  description, path) for crow_prompt's system prompt, offers the `load_skill` tool and the
  `/skills` command.
- pre_request injects the whole body of a skill whose trigger phrase the new user message
  contains (once per session), and re-injects bodies that compaction removed.

Each injection or load shows in the editor as a "Skill: NAME" tool call of kind read. yaml loads
when the first SKILL.md is parsed, not on import.
"""

from __future__ import annotations

from .callbacks import SkillsHook, default_skills
from .discover import Discovery, SearchDir, discover, search_dirs
from .skill import Skill, SkillError, load_skill

__all__ = [
    "Discovery",
    "SearchDir",
    "Skill",
    "SkillError",
    "SkillsHook",
    "default_skills",
    "discover",
    "load_skill",
    "search_dirs",
]
