"""`crow serve`: crow over the ACP SDK's Streamable HTTP and WebSocket transport, under uvicorn.

    run.py             uvicorn with a graceful SIGTERM: drain turns, answer every call, release leases
    app.py             the ASGI app: Host and Origin checks, bearer token, limits, health, draining
    guard.py           which Host and Origin a request may carry (browsers and DNS rebinding refused)
    token.py           the bearer token: from a file, or generated into one only its user can read
    connection.py      one ACP connection per client, closing the SDK gaps (load streams, unstable methods)
    client_servers.py  which stdio MCP servers a client may make the server start (none by default)
    outbound.py, ws.py what goes back to a client, over HTTP streams and WebSockets
    idle.py, reaper.py connections whose client is gone: leases rested, then closed
    sockets.py         a header timeout, and a cap on sockets below the process's fd limit
    listen.py          the listening sockets, bound before uvicorn starts: a taken port is one line

May import: crow_acp.acp, multi, store, config and everything below them, uvicorn and the ACP SDK.

Also in this room:

    bounds.py    What a `crow serve` client may name: directories inside the operator's roots, modes up to the cap
    users.py     who is asking: the users of a `--users` file, or the one `default` user of a single token
    auth.py      every `/acp` request's user, from its bearer token (compared in constant time)
    throttle.py  wrong tokens counted per client address: past the limit, 429 for the rest of the window
    metrics.py   `GET /metrics` in Prometheus text: turns, model and tool calls, questions, tokens, cost
"""
