"""The plugin contract: what callbacks, tools and slash commands are given and may return.

    hooks.py       the hook lists: what each passes, the shape of its callbacks, CrowCallbacks
    decisions.py   a tool call as before_tool / after_tool see it, and what before_tool decides
    session.py     SessionAccess (what a callback may touch), Tool, ToolContext, SlashCommand
    blackboard.py  the shared blackboard: a mapping of JSON values whose every change is stored
    function_tool.py  @tool: a Tool from a Python function, its schema from the type hints

Users import these names from crow_acp.api (or crow_acp). This room is near the bottom of the layers:
it declares the seams the core implements, so it may import only crow_acp.events, history, errors and
util, pydantic and anyio.
"""
