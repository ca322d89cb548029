"""The core: one session's conversation and the streaming ReAct loop that extends it.

    loop.py           the loop: pre_request, stream a reply, record it, post_response, run tools, repeat
    turn.py           a turn's parts: the calls of one reply, the reply (its bounds, its draft kept in
                      the store as it grows), the turn the loop runs
    request.py        the request chain: the steps that turn the history into one model request
    tool_gate.py      one tool call's path: before_tool steps (guards, permission), then after_tool
    hooks.py          how hook lists and user code are called (typed, checked when registered)
    session.py        a session's state and the edits that keep its history valid; a client's system
                      prompt over crow's own
    session_view.py   SessionView: the SessionAccess (plugin/session.py) of a live session
    history_rules.py  what a model is sent satisfies the strictest provider
    steering.py       messages for the running turn, taken at its next model call
    cut_turn.py       a turn crow's stop cut off, found on load; how /continue resumes it
    images.py         images in the history: how one is checked; the images tools return

May import: plugin, tools, events, history, errors, util, config, store, model (never mcp: a session's
MCP servers reach it as a ToolSource, core/session.py).
Never acp, policy, editor, multi, server or web: they build on the core, and hand it what it
needs (permission gates, request steps, tools) when they build a turn.
"""
