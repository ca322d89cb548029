"""The model: the client the loop streams from, and what bounds and describes it.

    client.py    the ModelClient protocol the loop talks to, and the OpenAI-compatible client behind it
    limits.py    what bounds one streamed request, and what repairs its text
    profiles.py  the models a session can switch between (Zed's model picker)
    retries.py   the openai client's retries, told to the turn that listens (shown as notices)

May import: crow_acp.config, errors, events, util, and the openai SDK (lazily).
"""
