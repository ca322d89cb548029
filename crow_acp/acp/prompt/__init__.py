"""One session/prompt: the editor's blocks as the user message, and the turn that answers it.

    turn.py            TurnRunner: one session/prompt, a model turn or a slash command, then end_turn
    message.py         THE module from ACP blocks to the user message (model_content): the blocks as
                       text, links and resources read only inside the roots, images checked and hidden
                       from a model that cannot see them
    steering.py        `_session/steering`: a message for the running turn, or a new turn when none runs
    mcp_prompts.py     beside it: MCP prompts as slash commands; resource links read through MCP
    mcp_live.py        the session's MCP servers as the editor sees them while they come and go
    thinking.py        the thinking level of the session's model requests (a config option, a request step)
    titles.py          the session's title, one short side call after the first turn
    checkpoint.py      the files kept before and after each prompt (timeline/), for /rewind

May import: questions/, updates/, rpc/ and the rooms below acp; never sessions/ or acp's top modules.
"""
