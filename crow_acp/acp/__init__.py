"""The ACP agent: AcpAgent's handlers and what they drive, from a session/new to a prompt's answer.

    agent.py           AcpAgent: the ACP handlers, thin, each delegating to one collaborator below
    agent_parts.py, run.py   AcpAgent(model, instructions=, tools=, mcp_servers=); run() / run_sync() in process
    open_sessions.py   the open sessions: found by id, driven from Python, cancelled, let go of
    session_open.py    bringing a session into memory (new, load, resume, fork) and replaying it
    session_options.py the session's config options (model, mode, thinking level) and /mode
    session_pool.py    which sessions stay in memory, and end_session when one leaves
    prompt_turn.py     TurnRunner: one session/prompt, a model turn or a slash command
    outbox.py, editor_link.py   where a session's events go; the editor's connection and capabilities
    prompt_blocks.py, prompt_input.py, prompt_links.py, prompt_images.py   the editor's prompt as the user message
    mcp_live.py, mcp_prompts.py   MCP servers as the editor sees them; MCP prompts as slash commands
    updates.py, replay.py, connection.py   loop events and stored history as session/update
    newer/, update_door.py     ACP shapes newer than the SDK's (schema 1.20+), and the one door they are sent through
    notices.py, warnings.py   notices and compactions as each client sees them; crow's own warnings as notices
    wire.py, schema.py, capabilities.py   the JSON-RPC wire, the SDK's schema, what initialize answers
    directories.py     the directories an editor names for a session, checked before any work
    routes.py          the SDK's agent connection, with the stable methods it does not route (session/delete)
    stored.py, leases.py, titles.py, thinking.py   session/list and /fork, one writer per session, titles,
                       the thinking level

May import: everything below it (policy, core, editor, mcp, model, store, config, util, and the
bottom modules), and the ACP SDK. Never multi, server, web or testing.
"""
