"""Serving an agent over stdio (`crow acp`), or hosting it in the caller's own process (`crow run`):
stdout kept for the protocol, a clean end on any signal.

    stdio.py       serve(agent): the stdio transport, logging, stdout protection
    stdin.py       stdin as a pipe the event loop can watch, whatever the user gave crow
    shutdown.py    SIGTERM, SIGINT, SIGHUP or stdin closing: nothing is left behind
    lazy_agent.py  the default agent answers initialize before a turn's modules are imported
    startup_gc.py  no cyclic GC during start-up; the start-up heap frozen once the agent is built
    memory.py      in-memory pipes whose ends are crow's wire, as stdio's are
    hosted.py      an agent served over those pipes in this process, shut down as crow acp shuts down

May import: crow_acp.acp and everything below it. Never multi, web or testing.
"""
