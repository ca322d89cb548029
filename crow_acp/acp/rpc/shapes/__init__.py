"""ACP shapes newer than the SDK's (schema 1.20 to 1.34, 2026-11-20): what crow reads and sends.

The installed SDK (agent-client-protocol 0.12.1) was generated from schema 1.19: its pydantic models
drop every field they do not know, so the capabilities a newer client advertises (notices,
compaction, subagents, plan operations) would never reach crow. The requests crow routes are
re-declared here as subclasses that keep those fields, named as the spec names them
(agentclientprotocol.com, protocol/v1); the machine-readable reference is the zod schema of
@agentclientprotocol/sdk 2.4.0 (tests/zod_check.py validates what crow sends against it).

The shapes live in capabilities.py (what the client says it can do; requests with newer fields),
updates.py (session updates), subagents.py and elicitation.py, each under 300 lines. The package
exports what `crow acp` needs before its agent is built (capabilities.py: the initialize and session
requests); the others are imported from their modules, when used.

Every feature is offered only to a client that advertised it: ClientFeatures says which.
"""

from .capabilities import (
    FAST,
    ClientFeatures,
    NewerAgentCapabilities,
    NewerForkSessionRequest,
    NewerInitializeRequest,
    NewerInitializeResponse,
    NewerLoadSessionRequest,
    NewerNewSessionRequest,
    NewerResumeSessionRequest,
    NewerSessionCapabilities,
)

__all__ = [
    "FAST",
    "ClientFeatures",
    "NewerAgentCapabilities",
    "NewerForkSessionRequest",
    "NewerInitializeRequest",
    "NewerInitializeResponse",
    "NewerLoadSessionRequest",
    "NewerNewSessionRequest",
    "NewerResumeSessionRequest",
    "NewerSessionCapabilities",
]
