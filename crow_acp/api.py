"""The plugin-facing API of crow, in one place: what a callback, a tool or a slash command is given and returns.

    CrowCallbacks     the hook lists; a callback is `async def cb(session: SessionAccess, **kwargs)`
      begin_session   once per new or loaded session               BeginSessionArgs
      pre_request     before every model call                      PreRequestArgs
      post_response   after every model response                   PostResponseArgs
      before_tool     before each tool call, before permission     BeforeToolArgs  -> ToolDecision | None
      after_tool      after each tool call, before it is recorded  AfterToolArgs   -> ToolResult | str | None
      end_turn        once per prompt, also after cancel or error  EndTurnArgs
      end_session     a session is closed, evicted, or crow stops  EndSessionArgs
    ToolDecision      what before_tool returns: Allow, Refuse(reason), Rewrite(arguments), Answer(result)
    ToolCallInfo      one tool call as before_tool / after_tool see it
    SlashCommand      a `/command` the editor offers; OffersCommands: a callback that brings some
    tool              `@tool`: a Tool from a Python function, its schema from the type hints (plugin/function_tool.py)
    Tool              what the model can call (FunctionTool wraps an async function); ToolContext: what a call gets
    ToolTimer         a call's time limit (ToolContext.timer): `with context.timer.paused():` while the user answers
    SessionAccess     what a callback may touch: messages, context, side prompts, reports (crow_acp/plugin/session.py)
    ToolResult, ToolView, PlanEntry, Usage    the values these pass around (crow_acp/events.py)

The kwargs of a list are its TypedDict, so a typed callback reads
`async def cb(session: SessionAccess, **kwargs: Unpack[EndTurnArgs])`, and its type is the list's
Protocol (EndTurnCallback, ...). Every list passes `hook`, the list's name, so a callback in several
lists knows which one called it. A callback gets only the keywords it names, so one naming a keyword
its list never passes is refused when it is added (HookSignatureError); `**kwargs` gets them all.
The names are defined in crow_acp/plugin/ (hooks.py, decisions.py, session.py, blackboard.py) and
FunctionTool in crow_acp/tools.py; how the lists run is crow_acp/core/hooks.py.
"""

from .events import PlanEntry, ToolResult, ToolView, Usage
from .plugin.blackboard import NotJsonError, SessionBlackboard
from .plugin.decisions import Allow, Answer, Refuse, Rewrite, ToolCallInfo, ToolDecision
from .plugin.function_tool import PythonTool, tool
from .plugin.hooks import (
    HOOKS,
    AfterToolArgs,
    AfterToolCallback,
    BeforeToolArgs,
    BeforeToolCallback,
    BeginSessionArgs,
    BeginSessionCallback,
    Callback,
    CrowCallbacks,
    EndReason,
    EndSessionArgs,
    EndSessionCallback,
    EndTurnArgs,
    EndTurnCallback,
    HookName,
    OffersCommands,
    PostResponseArgs,
    PostResponseCallback,
    PreRequestArgs,
    PreRequestCallback,
    StopReason,
)
from .plugin.hooks import (
    PASSES as PASSES,
)
from .plugin.session import Sandbox, SessionAccess, SlashCommand, Tool, ToolContext, ToolTimer
from .tools import FunctionTool

__all__ = [
    "HOOKS",
    "AfterToolArgs",
    "AfterToolCallback",
    "Allow",
    "Answer",
    "BeforeToolArgs",
    "BeforeToolCallback",
    "BeginSessionArgs",
    "BeginSessionCallback",
    "Callback",
    "CrowCallbacks",
    "EndReason",
    "EndSessionArgs",
    "EndSessionCallback",
    "EndTurnArgs",
    "EndTurnCallback",
    "FunctionTool",
    "HookName",
    "NotJsonError",
    "OffersCommands",
    "PlanEntry",
    "PostResponseArgs",
    "PostResponseCallback",
    "PreRequestArgs",
    "PreRequestCallback",
    "PythonTool",
    "Refuse",
    "Rewrite",
    "Sandbox",
    "SessionAccess",
    "SessionBlackboard",
    "SlashCommand",
    "StopReason",
    "Tool",
    "ToolCallInfo",
    "ToolContext",
    "ToolDecision",
    "ToolResult",
    "ToolTimer",
    "ToolView",
    "Usage",
    "tool",
]
