"""The ACP agent: AcpAgent's handlers and what they drive, from a session/new to a prompt's answer.

    agent.py           AcpAgent: the handlers, thin, delegating to the collaborators it owns:
    open_sessions.py   OpenSessions: the open sessions, driven from Python, closed or evicted
    session_open.py    SessionOpener: a session into memory (new, load, fork, resume)
    session_options.py SessionOptions: the session's config options (model, mode, thinking level)
    prompt_turn.py     TurnRunner: what one session/prompt does, a model turn or a slash command
    outbox.py, editor_link.py   events to the observers (held, stored first); the editor's connection
    session_pool.py    which sessions stay in memory
    prompt_blocks.py, prompt_input.py, prompt_links.py   the editor's prompt as the user message
    mcp_live.py, mcp_prompts.py   MCP servers as the editor sees them; MCP prompts as slash commands
    updates.py, replay.py, connection.py   loop events and stored history as session/update
    wire.py, schema.py, capabilities.py   the JSON-RPC wire, the SDK's schema, what initialize answers
    fork.py, leases.py, titles.py   session/fork, one writer per session, model-written titles

May import: everything below it (policy, core, editor, mcp, model, store, config, util, and the
bottom modules), and the ACP SDK. Never multi, server, web or testing.
"""
