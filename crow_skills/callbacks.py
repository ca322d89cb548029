"""default_skills(): discovery at begin_session, trigger injection in pre_request, load_skill and /skills.

Injected bodies go in as user messages, not system ones: several providers and chat templates
reject a system message anywhere but first, while consecutive user messages work everywhere.
They are stored hidden, so session/load replay does not show them as something the user typed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crow_acp.api import CrowCallbacks, SlashCommand, ToolContext
from crow_acp.events import ToolResult
from crow_acp.tools import FunctionTool

from .content import present, skill_in, tokens, wrap
from .discover import Discovery, SkillsDir, discover, search_dirs
from .listing import listing
from .triggers import matching

if TYPE_CHECKING:
    from crow_acp.api import SessionAccess

log = logging.getLogger(__name__)

CATALOG_KEY = "skills_catalog"
"""Context key of the catalog crow_prompt renders: a list of {name, description, path}."""
INJECTED_KEY = "skills_injected"
"""Context key of the skills whose bodies the model has seen, oldest first."""
REINJECT_BUDGET = 25_000
REINJECT_SKILL_CAP = 5_000
"""Tokens of skill bodies re-injected after compaction, in all and per skill (Claude Code's numbers)."""
REINJECTED_NOTE = "Re-loaded after the conversation was compacted."


class SkillsHook:
    """The state behind default_skills(): what each session found, and when it last saw a compaction."""

    def __init__(
        self,
        skills_dir: SkillsDir | None = None,
        home: str | Path | None = None,
        reinject_budget: int = REINJECT_BUDGET,
        reinject_skill_cap: int = REINJECT_SKILL_CAP,
    ) -> None:
        self.skills_dir = skills_dir
        self.home = Path(home).expanduser() if home else None
        self.reinject_budget = reinject_budget
        self.reinject_skill_cap = reinject_skill_cap
        self._found: dict[str, Discovery] = {}
        self._compactions: dict[str, int] = {}

    def found(self, session: SessionAccess) -> Discovery:
        """The session's skills, discovered on first use (begin_session normally does it)."""
        if (found := self._found.get(session.session_id)) is None:
            roots = (session.cwd, *(os.path.join(session.cwd, d) for d in session.additional_directories))
            found = discover(search_dirs(Path(session.cwd), self.skills_dir, self.home), roots)
            self._found[session.session_id] = found
        return found

    async def begin_session(self, session: SessionAccess, **kwargs: Any) -> None:
        self._found.pop(session.session_id, None)  # a loaded session looks again
        found = self.found(session)
        session.set_context(CATALOG_KEY, [skill.catalog_entry() for skill in found.skills.values()])
        if found.skills:
            session.add_tool(load_skill_tool(found))
        session.add_command(SlashCommand("skills", "List skills: source, status, warnings", self.list_command))
        for warning in found.warnings:  # a client that takes notices sees what `crow run` shows at start
            await session.notice("A skill was skipped", description=warning)
        # A loaded session may have been compacted after its last re-injection: check it once.
        self._compactions[session.session_id] = -1 if kwargs.get("loaded") else session.get_context("compactions", 0)

    async def end_session(self, session: SessionAccess, **kwargs: Any) -> None:
        self._found.pop(session.session_id, None)
        self._compactions.pop(session.session_id, None)

    async def pre_request(self, session: SessionAccess, step: int = 0, **kwargs: Any) -> None:
        found, messages = self.found(session), None
        compactions = session.get_context("compactions", 0)
        if compactions != self._compactions.get(session.session_id):
            self._compactions[session.session_id] = compactions
            messages = live_messages(session)
            await self.reinject(session, found, messages)
        if step == 0:  # a new user message: check its triggers once
            messages = live_messages(session) if messages is None else messages
            await self.inject_triggered(session, found, newest_user_text(messages))

    async def inject_triggered(self, session: SessionAccess, found: Discovery, text: str) -> None:
        injected = list(session.get_context(INJECTED_KEY, []))
        hits = matching(found.skills.values(), text)
        fresh = [(skill, phrase) for skill, phrase in hits if skill.name not in injected]
        for skill, phrase in fresh:
            note = f'The user\'s message mentions "{phrase}", a trigger of this skill. Follow it where it applies.'
            session.add_message("user", wrap(skill, note), hidden=True, skill=skill.name)
            injected.append(skill.name)
        if fresh:
            session.set_context(INJECTED_KEY, injected)
        for skill, phrase in fresh:
            await session.report(f"Skill: {skill.name}", kind="read", text=f'Triggered by "{phrase}": {skill.path}')

    async def reinject(self, session: SessionAccess, found: Discovery, messages: list[dict[str, Any]]) -> None:
        """Put back the skill bodies compaction removed: newest first, within the token budget."""
        injected = list(session.get_context(INJECTED_KEY, []))
        here = present(messages)
        budget = self.reinject_budget
        chosen: list[tuple[str, str]] = []
        dropped: list[str] = []
        for name in reversed([name for name in injected if name not in here]):
            skill = found.skills.get(name)
            text = wrap(skill, REINJECTED_NOTE, max_tokens=self.reinject_skill_cap) if skill else ""
            if not text or tokens(text) > budget:
                dropped.append(name)  # a trigger or load_skill may bring it back later
                continue
            budget -= tokens(text)
            chosen.insert(0, (name, text))
        for name, text in chosen:
            session.add_message("user", text, hidden=True, skill=name)
        if dropped:
            log.info("skills not re-injected after compaction (over budget or gone): %s", ", ".join(dropped))
            session.set_context(INJECTED_KEY, [name for name in injected if name not in dropped])
        for name, _ in chosen:
            await session.report(f"Skill: {name}", kind="read", text="Re-injected after compaction")

    async def list_command(self, session: SessionAccess, argument: str = "") -> str:
        return listing(self.found(session), set(session.get_context(INJECTED_KEY, [])))


def load_skill_tool(found: Discovery) -> FunctionTool:
    """The tool the model loads a skill's body with; its argument is limited to the known names."""
    skills = found.skills

    async def load(arguments: dict[str, Any], context: ToolContext) -> ToolResult | str:
        name = arguments.get("name")
        skill = skills.get(name) if isinstance(name, str) else None
        if skill is None:
            return ToolResult(f"Unknown skill {name!r}. Known skills: {', '.join(skills)}", is_error=True)
        session = context.session
        if name in present(live_messages(session)):
            return f"The skill {name!r} is already loaded above in this conversation; follow it."
        injected = [n for n in session.get_context(INJECTED_KEY, []) if n != name]
        session.set_context(INJECTED_KEY, [*injected, name])
        return wrap(skill)

    return FunctionTool(
        name="load_skill",
        description="Load the full instructions of a skill from the catalog in the system prompt. "
        "Call it when the user's task matches a skill's description, before starting the task.",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string", "enum": list(skills), "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": False,
        },
        handler=load,
        read_only=True,
        kind="read",
        title=lambda arguments: f"Skill: {arguments.get('name', '?')}",
        locations=lambda arguments: (str(skills[n].path),) if (n := arguments.get("name")) in skills else (),
    )


def live_messages(session: SessionAccess) -> list[dict[str, Any]]:
    """The messages, read-only and uncopied (get_messages() copies the whole history)."""
    return [entry.message for entry in session.entries()]


def newest_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user" and not skill_in(message.get("content")):
            content = message.get("content")
            if isinstance(content, list):  # multi-part content: its text parts
                return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
            return content or ""
    return ""


def default_skills(
    skills_dir: SkillsDir | None = None,
    *,
    home: str | Path | None = None,
    reinject_budget: int = REINJECT_BUDGET,
    reinject_skill_cap: int = REINJECT_SKILL_CAP,
) -> CrowCallbacks:
    """Agent Skills for a session: a catalog in the system prompt, load_skill, triggers and /skills.

    skills_dir: a folder (or several) of skills to use instead of the standard ones, which are
        $CROW_HOME/skills and ~/.agents/skills (user), then <cwd>/.crow/skills and
        <cwd>/.agents/skills (project, wins a name clash).
    home: the crow home; None means $CROW_HOME or ~/.crow.

    Compose it before default_prompt(), whose begin_session renders the catalog this one stores:
        CrowCallbacks(...) + default_skills()
        + CrowCallbacks(begin_session=[prompt], pre_request=[prompt], end_session=[prompt])
    """
    hook = SkillsHook(skills_dir, home, reinject_budget, reinject_skill_cap)
    return CrowCallbacks(
        begin_session=[hook.begin_session], pre_request=[hook.pre_request], end_session=[hook.end_session]
    )
