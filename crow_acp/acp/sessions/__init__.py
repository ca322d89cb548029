"""The sessions of one agent: opened, listed, forked, leased, configured and let go of.

    registry.py        OpenSessions, THE registry of open sessions (found by id, driven from Python,
                       released), and SessionPool, which of them stay in memory
    opener.py          SessionOpener: a session into memory (new, load, resume, fork) and its replay
    announce.py        what the editor is told once a session is answered: held events, cost, commands, sandbox
    options.py         the session's config options (model, mode, thinking level) and /mode
    ownership.py       whose sessions the agent's caller may touch (the store's answer), and `_crow/share`
    leases.py          one writer per session: the store's lease, renewed, and what happens when it is lost
    stored.py          stored sessions as the editor asks: session/list, session/fork, repairs on load
    directories.py     the directories an editor names, checked before any work
    system_prompt.py   the editor's systemPrompt, checked before any work
    auth_gate.py       auth_required while crow's model has no usable key; authenticate and logout
    rewind.py          /rewind and `_crow/rewind`: the history and the files back to before a message,
                       the tail kept as a fork, a rewind a kill cut short finished on open
    rewind_text.py     what /rewind lists and says, and its question about files changed outside crow

May import: prompt/, questions/, updates/, rpc/ and the rooms below acp; never acp's top modules.
"""
