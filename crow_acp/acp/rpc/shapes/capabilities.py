"""The newer client capabilities crow reads, and the requests and answers that carry newer fields
(initialize, session/new, load, resume, fork with `systemPrompt`; the system prompt capability)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from acp.schema import (
    AgentCapabilities,
    ForkSessionRequest,
    InitializeRequest,
    InitializeResponse,
    LoadSessionRequest,
    NewSessionRequest,
    ResumeSessionRequest,
    SessionCapabilities,
)
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

FAST = ConfigDict(use_attribute_docstrings=False)
"""For crow's subclasses of the SDK's models: pydantic would read their source for field docstrings at
import (the SDK's config asks for it), milliseconds each on `crow acp`'s start-up path (rpc/schema.py)."""


@dataclass(frozen=True)
class ClientFeatures:
    """The newer client capabilities, each True only when the client advertised it."""

    elicitation_form: bool = False
    """clientCapabilities.elicitation.form (1.21): `elicitation/create` in form mode."""
    elicitation_url: bool = False
    """clientCapabilities.elicitation.url (1.21): `elicitation/create` in URL mode."""
    notices: bool = False
    """clientCapabilities.session.notices (1.25): `notice` session updates."""
    compaction: bool = False
    """clientCapabilities.session.compaction (1.25): `compaction_update` and `compaction_summary_chunk`."""
    subagents: bool = False
    """clientCapabilities.subagents (1.34): child sessions, `subagent_update`, `session_message`."""
    plan: bool = False
    """clientCapabilities.plan (1.34): `plan_update` and `plan_removed` instead of the legacy `plan`."""

    @classmethod
    def from_capabilities(cls, raw: Any) -> ClientFeatures:
        """Read from the raw `clientCapabilities` object; anything malformed counts as not advertised."""
        caps = _object(raw)
        elicitation = _object(caps.get("elicitation"))
        session = _object(caps.get("session"))
        return cls(
            elicitation_form=_advertised(elicitation.get("form")),
            elicitation_url=_advertised(elicitation.get("url")),
            notices=_advertised(session.get("notices")),
            compaction=_advertised(session.get("compaction")),
            subagents=_advertised(caps.get("subagents")),
            plan=_advertised(caps.get("plan")),
        )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _advertised(value: Any) -> bool:
    """A capability object (`{}` and up) advertises it; null, false or anything else does not."""
    return isinstance(value, dict)


class NewerInitializeRequest(InitializeRequest):
    """`initialize`, with the newer client capabilities kept as `client_features`."""

    model_config = FAST

    client_features: ClientFeatures = ClientFeatures()

    @model_validator(mode="before")
    @classmethod
    def _read_features(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data, "client_features": ClientFeatures.from_capabilities(data.get("clientCapabilities"))}
        return data


# Client system prompts (schema 1.30): `systemPrompt` {mode, content} on session/new, load, resume and
# fork, which the SDK's models drop; crow keeps it raw as `system_prompt` and checks it itself
# (sessions/system_prompt.py answers -32602 for a bad one). Advertised as `sessionCapabilities.systemPrompt`,
# `mode.override` saying that crow also lets the client's prompt replace its own.


class _CarriesSystemPrompt(BaseModel):
    model_config = FAST
    system_prompt: Annotated[Any, Field(alias="systemPrompt")] = None
    """The raw `systemPrompt` object, or None when the request has none."""


class NewerNewSessionRequest(NewSessionRequest, _CarriesSystemPrompt):
    """`session/new`, with its `systemPrompt`."""

    model_config = FAST


class NewerLoadSessionRequest(LoadSessionRequest, _CarriesSystemPrompt):
    """`session/load`, with its `systemPrompt`."""

    model_config = FAST


class NewerResumeSessionRequest(ResumeSessionRequest, _CarriesSystemPrompt):
    """`session/resume`, with its `systemPrompt`."""

    model_config = FAST


class NewerForkSessionRequest(ForkSessionRequest, _CarriesSystemPrompt):
    """`session/fork`, with its `systemPrompt`."""

    model_config = FAST


class NewerSessionCapabilities(SessionCapabilities):
    model_config = FAST
    system_prompt: Annotated[dict[str, Any] | None, Field(alias="systemPrompt")] = None
    """zSessionSystemPromptCapabilities: `{}` for append only, `{"mode": {"override": {}}}` for both."""


class NewerAgentCapabilities(AgentCapabilities):
    model_config = FAST
    session_capabilities: Annotated[NewerSessionCapabilities, Field(alias="sessionCapabilities")] = (
        NewerSessionCapabilities()
    )


class NewerInitializeResponse(InitializeResponse):
    model_config = FAST
    agent_capabilities: Annotated[NewerAgentCapabilities, Field(alias="agentCapabilities")] = NewerAgentCapabilities()
