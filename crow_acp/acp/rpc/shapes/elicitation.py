"""Elicitation shapes (1.21): `elicitation/create`, its answer, `elicitation/complete`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from pydantic.alias_generators import to_camel

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
