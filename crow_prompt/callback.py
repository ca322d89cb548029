"""default_prompt(): the callback that sets the system prompt, and keeps it current."""

from __future__ import annotations

import datetime
import inspect
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crow_acp.config import crow_home

from .context import CONTEXT_CAP, CONTEXT_FILES, Fingerprint, candidates, fingerprint, read_context
from .facts import git_summary, os_name, shell_name
from .render import DEFAULT_LABEL, PromptTemplateError, check, default_source, render

if TYPE_CHECKING:
    from crow_acp.api import SessionAccess

log = logging.getLogger(__name__)

BUILTIN_VARIABLES = ("cwd", "date", "os", "shell", "git", "tools", "skills", "workspace_context")
CATALOG_KEY = "skills_catalog"
"""Session context key where crow_skills leaves its catalog: a list of {name, description, path}."""

CONTEXT_CHANGED = "The workspace context files changed since the system prompt was written. They now read:\n\n"
Variable = Any | Callable[["SessionAccess"], Any]


@dataclass(frozen=True)
class Template:
    source: str
    label: str


@dataclass(frozen=True)
class Basis:
    """What a system prompt was built from; a change in it means the prompt is stale."""

    compactions: int
    files: Fingerprint
    """The workspace context files."""
    catalog: str
    tools: tuple[str, ...]
    template: Fingerprint = ()


class PromptCallback:
    """Sets the system prompt at begin_session; in pre_request it rebuilds only when the prompt is stale.

    Stale means: the conversation was compacted, the skills catalog or tool list changed, or (before a
    new prompt) the template file changed on disk. A workspace context file that changed (before a new
    prompt) does not rewrite the system prompt, which every request starts with and providers cache:
    the new text is told at the end of the history, and goes into the prompt at the next rebuild.
    """

    def __init__(
        self,
        template: str | Path | None = None,
        variables: Mapping[str, Variable] | None = None,
        *,
        system_path: str | Path | None = None,
        home: str | Path | None = None,
        context_files: tuple[str, ...] = CONTEXT_FILES,
        context_cap: int = CONTEXT_CAP,
    ) -> None:
        self.variables = dict(variables or {})
        self.known = {*BUILTIN_VARIABLES, *self.variables}
        if isinstance(template, str):
            check(template, "default_prompt(template=...)", self.known)  # a developer's typo fails at once
        self.template = template
        self.home = Path(home).expanduser() if home else None
        self.system_path = Path(system_path).expanduser() if system_path else None
        self.context_files = tuple(context_files)
        self.context_cap = context_cap
        self._basis: dict[str, Basis] = {}
        self._skipped: dict[str, set[str]] = {}

    async def __call__(self, session: SessionAccess, **kwargs: Any) -> None:
        if kwargs.get("hook") == "end_session":
            self._basis.pop(session.session_id, None)
            self._skipped.pop(session.session_id, None)
            return
        step = kwargs.get("step")
        if step is not None:
            old = self._basis.get(session.session_id)
            new = self._basis_now(session, files=None if step == 0 or old is None else old.files)
            if old == new:
                return
            if old is not None and replace(old, files=new.files) == new:  # only the context files changed
                self._basis[session.session_id] = new
                await self._tell_context(session)
                return
        await self.apply(session)

    async def _tell_context(self, session: SessionAccess) -> None:
        text = await self._workspace_context(session)
        note = CONTEXT_CHANGED + (text or "(no workspace context files now)")
        session.add_message("user", note, hidden=True, note="workspace_context")

    async def apply(self, session: SessionAccess) -> None:
        """Render and set the system prompt; a broken template falls back to the default and is reported."""
        self._basis[session.session_id] = self._basis_now(session)
        variables = await self.variables_for(session)
        template: Template | None = None
        try:
            template = self.template_for()
            text = render(template.source, variables, template.label)
        except PromptTemplateError as exc:
            if template is not None and template.label == DEFAULT_LABEL:
                raise  # the shipped template is broken: crow's bug, not the user's
            log.warning("%s", exc)
            text = render(default_source(), variables, DEFAULT_LABEL)
            await session.report(
                "System prompt template error",
                status="failed",
                text=f"{exc}\n\nCrow uses its default system prompt until the template is fixed.",
            )
        session.set_system_prompt(text)

    def template_for(self) -> Template:
        """The Python template, else [prompt] system_path, else $CROW_HOME/prompts/system.md, else the default."""
        if isinstance(self.template, str):
            return Template(self.template, "default_prompt(template=...)")
        for path, required in ((self.template, True), (self._configured(), True), (self._home_file(), False)):
            if path is None or not (required or path.is_file()):
                continue
            try:
                return Template(path.read_text(encoding="utf-8"), str(path))
            except (OSError, UnicodeDecodeError) as exc:
                raise PromptTemplateError(f"{path}: cannot read the template: {exc}") from exc
        return Template(default_source(), DEFAULT_LABEL)

    async def variables_for(self, session: SessionAccess) -> dict[str, Any]:
        cwd = Path(session.cwd)
        values: dict[str, Any] = {
            "cwd": str(cwd),
            "date": datetime.date.today().isoformat(),
            "os": os_name(),
            "shell": shell_name(),
            "git": await git_summary(cwd),
            "tools": session.tool_names(),
            "skills": session.get_context(CATALOG_KEY) or [],
            "workspace_context": await self._workspace_context(session),
        }
        for name, value in self.variables.items():
            value = value(session) if callable(value) else value
            values[name] = await value if inspect.isawaitable(value) else value
        return values

    async def _workspace_context(self, session: SessionAccess) -> str:
        """The context files' text; a file left out is shown to the user once per session, saying why."""
        roots = tuple(os.path.join(session.cwd, d) for d in session.additional_directories)
        found = read_context(Path(session.cwd), self.context_files, self.context_cap, roots)
        shown = self._skipped.setdefault(session.session_id, set())
        if fresh := [line for line in found.skipped if line not in shown]:
            shown.update(fresh)
            text = "\n".join(fresh) + "\n\nCrow reads context files only inside the workspace, and only regular files."
            await session.report("Workspace context file skipped", status="failed", text=text)
        return found.text

    def _basis_now(self, session: SessionAccess, files: Fingerprint | None = None) -> Basis:
        template: Fingerprint = ()
        if files is None:  # stat calls only before a new prompt, not before every model call
            files = fingerprint(candidates(Path(session.cwd), self.context_files))
            template = fingerprint(list(filter(None, [self._template_path()])))
        elif (old := self._basis.get(session.session_id)) is not None:
            template = old.template
        catalog = json.dumps(session.get_context(CATALOG_KEY))  # a snapshot: get_context returns the live value
        return Basis(session.get_context("compactions", 0), files, catalog, tuple(session.tool_names()), template)

    def _template_path(self) -> Path | None:
        if isinstance(self.template, Path):
            return self.template
        return None if isinstance(self.template, str) else self._configured() or self._home_file()

    def _configured(self) -> Path | None:
        if self.system_path is None or self.system_path.is_absolute():
            return self.system_path
        return self._home() / self.system_path  # relative to $CROW_HOME, like the rest of crow's files

    def _home_file(self) -> Path:
        return self._home() / "prompts" / "system.md"

    def _home(self) -> Path:
        return self.home or crow_home()


def default_prompt(
    template: str | Path | None = None,
    variables: Mapping[str, Variable] | None = None,
    *,
    system_path: str | Path | None = None,
    home: str | Path | None = None,
    context_files: tuple[str, ...] = CONTEXT_FILES,
    context_cap: int = CONTEXT_CAP,
) -> PromptCallback:
    """The system prompt callback: put it in begin_session, and also in pre_request to keep it current.

    template: Jinja2 template text (str) or a template file (Path, re-read on every build). Without
        it: `system_path` (the [prompt] system_path setting; relative to $CROW_HOME), then
        `$CROW_HOME/prompts/system.md`, then the default that ships in crow_prompt/templates/.
    variables: extra template variables, or overrides of the built-in ones; a callable value is
        called with the session (and awaited if need be) at every build.

    Rendering is strict. A Python template naming an unknown variable raises PromptTemplateError
    here; a broken template file is reported to the editor as a failed "System prompt template
    error" tool call naming the file, line and variable, and the session uses the default prompt.
    """
    return PromptCallback(
        template,
        variables,
        system_path=system_path,
        home=home,
        context_files=context_files,
        context_cap=context_cap,
    )
