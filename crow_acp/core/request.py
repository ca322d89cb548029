"""The request chain: the steps that make one model request from the session, in order.

    session.messages() ─▶ step ─▶ step ─▶ … ─▶ strict history ─▶ the model

Each step gets the request as the steps before it left it and returns it, changed or not; it may
not touch the session. Two steps are the core's own, because any model call needs them whoever built
the turn: images hidden from a model that cannot see them, and the thinking level. Features of the
layers above plug in after them (the plan-mode note: acp builds the chain for each turn), never into
the loop. The strict history comes last, always, so no step can send a provider what it would refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..tools import openai_schema
from .history_rules import strict_messages
from .images import FLAG as IMAGES_FLAG

if TYPE_CHECKING:
    from .session import Session


@dataclass
class ModelRequest:
    """One model call: the messages, the tools offered, and the provider options crow sets."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    reasoning_effort: str | None = None


class RequestStep(Protocol):
    def __call__(self, session: Session, request: ModelRequest, /) -> ModelRequest: ...


@dataclass(frozen=True)
class RequestChain:
    steps: Sequence[RequestStep] = ()

    def build(self, session: Session) -> ModelRequest:
        # By name: the tools lead every request, and providers cache only an unchanged prefix, so a server
        # that lists its tools in another order (or comes up later than another) must not reorder them.
        tools = sorted(session.tools(), key=lambda tool: tool.name)
        request = ModelRequest(session.messages(), [openai_schema(tool) for tool in tools])
        request = thinking_effort(session, hide_images(session, request))
        for step in self.steps:
            request = step(session, request)
        request.messages = strict_messages(request.messages)
        return request


# ---- The core's own steps ----

THINKING_KEY = "thought_level"
"""Where the session's data keeps the thinking level the user picked (acp/prompt/thinking.py offers it)."""
THINKING_LEVELS = ("low", "medium", "high")
OMITTED = "[image omitted: the current model does not accept images]"


def thinking_level(session: Session) -> str | None:
    """The effort to send: the session's pick, else the profile's reasoning_effort (None sends nothing)."""
    profile = session.model.profile
    chosen = session.data.get(THINKING_KEY)
    return chosen if profile.reasoning and chosen in THINKING_LEVELS else profile.reasoning_effort


def thinking_effort(session: Session, request: ModelRequest) -> ModelRequest:
    request.reasoning_effort = thinking_level(session)
    return request


def hide_images(session: Session, request: ModelRequest) -> ModelRequest:
    """Image parts become a note when the current model is not a vision model."""
    if session.model.profile.vision or not session.data.get(IMAGES_FLAG):
        return request  # the common case costs nothing: no copy of the history
    request.messages = [_without_images(message) for message in request.messages]
    return request


def _without_images(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    texts = [p["text"] if p.get("type") == "text" else OMITTED for p in content]
    return {**message, "content": "\n\n".join(texts)}
