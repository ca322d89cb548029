"""The ACP agent: AcpAgent's handlers and what they drive, from a session/new to a prompt's answer.

    agent.py           AcpAgent: the handlers, thin, delegating to what follows
    session_open.py    bringing a session into memory (new, load, fork, resume)
    session_options.py the session's config options (model, mode, thinking level)
    session_pool.py    which sessions stay in memory, and how one leaves it
    agent_sessions.py  driving open sessions from Python, without an editor's requests
    prompt_turn.py     what one session/prompt does: a model turn or a slash command
    prompt_blocks.py, prompt_input.py, prompt_links.py   the editor's prompt as the user message
    mcp_live.py, mcp_prompts.py   MCP servers as the editor sees them; MCP prompts as slash commands
    updates.py, replay.py, connection.py   loop events and stored history as session/update
    wire.py, schema.py, capabilities.py   the JSON-RPC wire, the SDK's schema, what initialize answers
    fork.py, leases.py, titles.py   session/fork, one writer per session, model-written titles

May import: everything below it (policy, core, editor, mcp, model, store, config, util, and the
bottom modules), and the ACP SDK. Never multi, server, web or testing.
"""
