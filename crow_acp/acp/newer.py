"""ACP shapes newer than the SDK's: what clients of schema 1.20 to 1.34 (2026-11-20) send crow.

The installed SDK (agent-client-protocol 0.12.1) was generated from schema 1.19: its pydantic models
drop every field they do not know, so the capabilities a newer client advertises (notices,
compaction, subagents, plan operations) would never reach crow. The requests crow routes are
re-declared here as subclasses that keep those fields, named as the spec names them
(agentclientprotocol.com, protocol/v1); the machine-readable reference is the zod schema of
@agentclientprotocol/sdk 2.4.0 (tests/zod_check.py validates what crow sends against it).

Every feature is offered only to a client that advertised it: ClientFeatures says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from acp.schema import InitializeRequest
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.alias_generators import to_camel


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

    client_features: ClientFeatures = ClientFeatures()

    @model_validator(mode="before")
    @classmethod
    def _read_features(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data, "client_features": ClientFeatures.from_capabilities(data.get("clientCapabilities"))}
        return data


# Elicitation (schema 1.21): `elicitation/create` (agent -> client request), its response, and
# `elicitation/complete` (agent -> client notification), as zCreateElicitationRequest,
# zCreateElicitationResponse and zCompleteElicitationNotification name them. Crow sends only the
# session scope (zElicitationSessionScope, `toolCallId` set when a tool call waits); the request
# scope (zElicitationRequestScope, `requestId`) is for questions outside a session, which crow never asks.


class _Wire(BaseModel):
    """camelCase on the wire, snake_case in Python; None fields are left out when sent."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class EnumOption(_Wire):
    """zEnumOption: one titled choice of a single-select string."""

    const: str
    title: str
    description: str | None = None


class ElicitationProperty(_Wire):
    """zElicitationPropertySchema: one field of a form (string, number, integer, boolean or a multi-select array).

    Only the keys the schema names are kept: anything else a server put in its form is not sent on."""

    type: Literal["string", "number", "integer", "boolean", "array"]
    title: str | None = None
    description: str | None = None
    min_length: int | None = Field(None, ge=0)
    max_length: int | None = Field(None, ge=0)
    pattern: str | None = None
    format: Literal["email", "uri", "date", "date-time"] | None = None
    enum: list[str] | None = None
    one_of: list[EnumOption] | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = Field(None, ge=0)
    max_items: int | None = Field(None, ge=0)
    items: dict[str, Any] | None = None
    default: str | float | bool | list[str] | None = None


class ElicitationSchema(_Wire):
    """zElicitationSchema: a flat object of primitive properties."""

    type: Literal["object"] = "object"
    title: str | None = None
    description: str | None = None
    properties: dict[str, ElicitationProperty] = {}
    required: list[str] | None = None


class CreateElicitationRequest(_Wire):
    """zCreateElicitationRequest, session-scoped: form mode (`requestedSchema`) or URL mode (`elicitationId`, `url`)."""

    session_id: str
    tool_call_id: str | None = None
    mode: Literal["form", "url"]
    message: str
    requested_schema: ElicitationSchema | None = None
    elicitation_id: str | None = None
    url: str | None = None


ContentValue = StrictStr | StrictInt | StrictFloat | StrictBool | list[StrictStr]
"""zElicitationContentValue: what one field of an accepted form may hold."""


class CreateElicitationResponse(BaseModel):
    """zCreateElicitationResponse: accept (with `content` in form mode), decline or cancel; anything else is refused."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ContentValue] | None = None


class CompleteElicitationNotification(_Wire):
    """zCompleteElicitationNotification: a URL-mode question the server says is done."""

    elicitation_id: str


ELICITATION_CREATE = "elicitation/create"
ELICITATION_COMPLETE = "elicitation/complete"
