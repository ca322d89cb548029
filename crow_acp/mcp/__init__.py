"""MCP servers of a session, as crow's MCP client sees them.

    host.py     a session's servers (McpHost)
    server.py   one server's connection, an actor in its own long-lived task
    connect.py  opening one server (stdio, streamable HTTP, SSE), and naming its failures
    specs.py    which servers a session connects: the editor's and config.toml's
    lists.py    what a server offers (tools, prompts, resources), listed again on list_changed
    tool.py     an MCP tool as a crow Tool, and its result as text for the model
    inbox.py    what a server sends, checked before the SDK acts on it
    stdio.py    starting a stdio server so that it never outlives crow
    guard.py    the parent process of every stdio server (started with crow's Python)
    relay.py    a stdio server's output made safe for the SDK
    http.py     remote servers' answers with their text repaired

May import: crow_acp.api, tools, events, errors, util, config, and the MCP SDK (lazily).

Also in this room:

    address_guard.py  Where a `crow serve` client's HTTP and SSE MCP servers may point: the public internet, and...
    elicit.py         An MCP server's elicitation (a question for the user in the middle of a tool call), as crow's...
"""
