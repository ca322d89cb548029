"""`crow serve`: crow over the ACP SDK's Streamable HTTP and WebSocket transport, under uvicorn.

    connection.py  one ACP connection per client, closing the SDK gaps (load streams, unstable methods)
    app.py         the ASGI app: bearer token, limits, health, draining
    run.py         uvicorn with a graceful SIGTERM: drain turns, answer every call, release leases
"""
