"""Who may do what: the permission policy and the modes it answers to.

    permissions.py    allow, deny or ask the editor under the session's mode; fails closed
    modes.py          ask, accept edits, plan, full access (Zed's mode picker)
    plan_words.py     the words that make plan mode refuse a tool, whatever its hints
    remembered.py     "always allow" answers: one exact command, in these roots only
    write_targets.py  where a write would land, resolved as the write resolves it

May import: crow_acp.core and everything below it, and crow_acp.editor (paths).

Also in this room:

    sandboxing.py  Which sandbox a command runs in: what the config allows, what the call asks for, what the machine...
"""
