"""The model: the client the loop streams from, and what bounds and describes it.

    client.py    the ModelClient protocol the loop talks to, its neutral deltas, and the `chat` wire
    wires.py     which wire a profile speaks (choose_api), and the client for it
    anthropic_wire.py, anthropic_request.py   the `anthropic` wire: Anthropic Messages
    responses_wire.py, responses_request.py   the `responses` wire: OpenAI Responses
    limits.py    what bounds one streamed request, and what repairs its text
    profiles.py  the models a session can switch between (Zed's model picker)
    retries.py   the SDK clients' retries, told to the turn that listens (shown as notices)
    costs.py     what a session has spent, from the profile's prices (charged by the loop, shown on load)

May import: crow_acp.config, errors, events, history, util, and the openai and anthropic SDKs (lazily).

Also in this room:

    describe.py  What an OpenAI-client error means, in one sentence a user can act on (the chat and responses wires)
"""
