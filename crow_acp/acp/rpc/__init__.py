"""The pinned ACP SDK's edges: what crow adds to, works around or re-declares of agent-client-protocol.

The one room to shrink when the SDK catches up with the spec.

    wire.py            the JSON-RPC wire over stdio: bounded lines, clean JSON, no traceback on bad input
    routes.py          the SDK's agent connection, with the stable methods it does not route (session/delete)
    request_cancel.py  $/cancel_request for an editor's request in flight
    schema.py          importing the SDK's schema without the field docstrings it does not need
    capabilities.py    what initialize answers: one place, so `crow acp` can answer before the agent is built
    auth.py            the auth method initialize offers (`crow setup` in a terminal)
    door.py            the one door every session/update and newer request goes out through; text
                       chunks serialized once, past the SDK's models
    shapes/            ACP shapes newer than the SDK's (schema 1.20+): capabilities, updates, subagents,
                       elicitation

May import: the rooms below acp (util, config, errors, events, version) and the ACP SDK; nothing else of acp.
"""
