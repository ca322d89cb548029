"""The ACP agent: AcpAgent's handlers and what they drive, from a session/new to a prompt's answer.

    agent.py           AcpAgent: the ACP handlers, thin, each delegating to one collaborator below
    agent_parts.py     AcpAgent(model, instructions=, tools=, mcp_servers=): the parts it turns into
    run.py             run() / run_sync(): one prompt in process, without an editor
    driven.py          what Python (a MultiAgent, a bridge, an observer) drives open sessions with
    served.py          who the agent serves (act_for), session/list and delete by who asks, the "_" requests

Its rooms, each above the next (import-linter holds the order):

    sessions/          the open sessions' registry, the opener, options, leases, stored sessions
    prompt/            one session/prompt: the blocks as the user message, the turn runner
    questions/         asking the user through the editor: elicitation, forms, ask_user
    updates/           the one outgoing path of every session/update, live and on replay
    rpc/               the pinned SDK's edges: the wire, routes, schema, capabilities, newer shapes

May import: everything below it (policy, core, editor, mcp, model, store, config, util, and the
bottom modules), and the ACP SDK. Never multi, server, web or testing.
"""
