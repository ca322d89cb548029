"""One session/prompt: the editor's blocks as the user message, and the turn that answers it.

    turn.py            TurnRunner: one session/prompt, a model turn or a slash command, then end_turn
    message.py         THE module from ACP blocks to the user message (model_content): the blocks as
                       text, links and resources read only inside the roots, images checked and hidden
                       from a model that cannot see them
    steering.py        `_session/steering`: a message for the running turn, or a new turn when none runs
    mcp.py             the session's MCP servers in its prompts: waited for, failures shown, prompts as
                       slash commands, resource links read through MCP
    thinking.py        the thinking-level picker: a config option (core/request.py sends the level)
    titles.py          the session's title, one short side call after the first turn

May import: questions/, updates/, rpc/ and the rooms below acp; never sessions/ or acp's top modules.
"""
