"""What the editor sees of a session: one outgoing path for every session/update, live and on replay.

A loop event goes outbox.py -> the editor's AcpUpdates (shapes.py; the observers after it) -> rpc/door.py:
a text or thought chunk serialized once, any other update through the SDK or as its newer JSON. A
session/load replays the stored history through the same builders (shapes.py replay_updates) into
replay.py's sink. Within acp, this room is the one that builds update shapes (the SDK's models, and
rpc/shapes/ for the newer ones).

    outbox.py          where a session's events go: held until its response is out, flushed to the store first
    shapes.py          AcpUpdates: loop events and stored history as session/update (tool calls, plans, usage)
    editor_link.py     the link to the editor: its connection, what it said it can do, where replays go
    replay.py          where a replay goes (one by one, or one batch for `crow serve`); images put back
    notices.py         notices and compaction as each client sees them (1.25 notices, or older fallbacks)
    warnings.py        crow's own warnings (model errors, a lost lease, config, sandbox) as notices
    plans.py           plans on load: what write_plan showed, and plan operations (1.34) once per plan

May import: rpc/ and the rooms below acp; never sessions/, prompt/, questions/ or acp's top modules.
"""
