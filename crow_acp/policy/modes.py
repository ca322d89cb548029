"""Permission modes: ask, accept edits, auto, plan, full access (Zed's mode picker).

The mode is persisted per session (`session.data["mode"]`), starts at `[permissions] default_mode`,
and is enforced by the permission policy (permissions.py), the last before_tool step:

    ask           every tool not marked read-only asks (config rules apply); a command's question
                  says it is sandboxed and also offers to run it outside the sandbox
    accept_edits  edits whose every location lies inside the session's roots run without asking
    auto          those edits, and commands in the sandbox, run without asking; a command that asks
                  for the network or to leave the sandbox asks (sandboxing.py)
    plan          no writes, edits, deletes, moves at all, whatever the tool claims; commands run
                  in a read-only sandbox without network; the model is told it is planning
    full_access   nothing asks and commands run outside the sandbox; deny rules from config still hold

Where the sandbox cannot run, auto and plan ask for every command, as ask does.

`[permissions] max_mode` (`crow serve --max-mode`) caps them, in the order ask < plan < accept_edits
< auto < full_access: a session's mode above the cap (stored, set, or the default) acts as the cap,
and below full_access no command runs outside the sandbox, whatever a question's answer says.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..config.tables import MODE_ORDER
from ..tools import FunctionTool
from .plan_words import denial_word

if TYPE_CHECKING:
    from ..api import Tool
    from ..core.request import ModelRequest
    from ..core.session import Session
    from ..events import ToolView

Mode = Literal["ask", "accept_edits", "auto", "plan", "full_access"]
MODE_IDS: tuple[Mode, ...] = get_args(Mode)
CHANGING_KINDS = frozenset({"edit", "delete", "move", "execute"})
RANK: dict[str, int] = {mode: rank for rank, mode in enumerate(MODE_ORDER)}
"""How permissive each mode is, for `max_mode`."""


def within(mode: str, cap: Mode) -> bool:
    return mode in RANK and RANK[mode] <= RANK[cap]


def capped(mode: Mode, cap: Mode) -> Mode:
    """The mode that holds under the cap: itself, or the cap when it is more permissive."""
    return mode if within(mode, cap) else cap


def allowed_modes(cap: Mode) -> list[Mode]:
    return [mode for mode in MODE_IDS if within(mode, cap)]


@dataclass(frozen=True)
class ModeInfo:
    id: Mode
    name: str
    description: str


MODES = (
    ModeInfo("ask", "Ask", "Ask before any tool that is not read-only"),
    ModeInfo("accept_edits", "Accept edits", "Edit files in the workspace without asking; commands still ask"),
    ModeInfo(
        "auto", "Auto", "Sandboxed commands and edits in the workspace run without asking; leaving the sandbox asks"
    ),
    ModeInfo("plan", "Plan", "Read and plan only: no edits or writes; commands run in a read-only sandbox"),
    ModeInfo(
        "full_access", "Full access", "Run every tool without asking, commands outside the sandbox (deny rules hold)"
    ),
)

PLANNING_NOTE = (
    "You are in plan mode. Research with read-only tools and write a plan for the user to approve. "
    "Do not edit, write, move or delete files: such calls are refused. You may run commands to explore "
    "(run_command): they run in a read-only sandbox without network, so commands that write fail."
)


PLAN_OVER_NOTE = "Plan mode is over: edits, writes and commands are allowed again, as the user's mode permits."
NOTED = "mode_noted"
"""Session context: [the mode the model was last told of, the compaction count then]."""


def note_mode_change(session: Session) -> None:
    """Tell the model it entered or left plan mode, once, as a hidden message at the end of the history
    (a turn calls it right before recording the prompt, which stays the newest user message). At the
    end, not in the system prompt: a change there would rewrite the start of every later request, and
    providers cache only an unchanged prefix. After a compaction that may have summarized the note
    away, plan mode is told again."""
    mode, compactions = current_mode(session, "ask"), session.context.get("compactions", 0)
    noted = session.context.get(NOTED)
    was, then = (noted[0], noted[1]) if isinstance(noted, list) and len(noted) == 2 else (None, 0)
    from ..history import EntryMeta

    meta = EntryMeta("injected", other={"note": "mode"})
    if mode == "plan" and not (was == "plan" and then == compactions):  # entered, or told again after compaction
        session.record({"role": "user", "content": PLANNING_NOTE}, meta)
    elif mode != "plan" and was == "plan":
        session.record({"role": "user", "content": PLAN_OVER_NOTE}, meta)
    session.context[NOTED] = [mode, compactions]
    session.save()


def plan_note(session: Session, request: ModelRequest) -> ModelRequest:
    """A request step kept for callers that build their own chain: the plan note, when the session is
    in plan mode and no stored note tells it already (note_mode_change, which crow's turns use)."""
    noted = session.context.get(NOTED)
    if current_mode(session, "ask") == "plan" and not (isinstance(noted, list) and noted[:1] == ["plan"]):
        request.messages = _with_plan_note(request.messages)
    return request


def _with_plan_note(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if messages and messages[0].get("role") == "system":  # one system message, at the start
        content = messages[0].get("content")
        if isinstance(content, list):
            joined: Any = [*content, {"type": "text", "text": PLANNING_NOTE}]
        else:
            joined = f"{content or ''}\n\n{PLANNING_NOTE}".lstrip()
        return [{**messages[0], "content": joined}, *messages[1:]]
    return [{"role": "system", "content": PLANNING_NOTE}, *messages]


def current_mode(session: Session, default: Mode) -> Mode:
    mode = session.data.get("mode")
    return mode if mode in MODE_IDS else default


def set_mode(session: Session, mode: Mode) -> None:
    session.data["mode"] = mode
    session.save()


def plan_refusal(tool: Tool, view: ToolView) -> str | None:
    """Why plan mode refuses this call, or None. A read-only claim alone is not trusted: a denial word
    (plan_words.py) anywhere in the tool's name or title, or a changing kind, refuses it too. The
    title of crow's own function tools describes the arguments (`Read run.sh`), so only their
    name counts; their "think" tools (the plan) change nothing but the plan."""
    own = isinstance(tool, FunctionTool)
    if own and view.kind == "think" and tool.read_only:
        return None
    if not tool.read_only:
        why = "is not marked read-only"
    elif word := denial_word(tool.name, *([] if own else [view.title])):
        why = f"has the word {word!r} in its name or title"
    elif view.kind in CHANGING_KINDS:
        why = f"is a tool of kind {view.kind!r}"
    else:
        return None
    return f"Plan mode: the tool {tool.name!r} {why}, so it may not run. Finish the plan; the user switches modes."


def edit_inside_roots(view: ToolView, roots: list[str]) -> bool:
    """Accept-edits mode: an edit whose every location lies inside one of the roots (the cwd first).
    Symlinks are resolved here; the tool itself still confines what it really opens."""
    if view.kind != "edit" or not view.locations:
        return False
    real_roots = [os.path.realpath(root) for root in roots]
    # roots[0] is the session's cwd: a relative location starts there.
    return all(_inside(os.path.realpath(os.path.join(roots[0], place)), real_roots) for place in view.locations)


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)
