"""The request chain: the steps that make one model request from the session, in order.

    session.messages() ─▶ step ─▶ step ─▶ … ─▶ strict history ─▶ the model

Each step gets the request as the steps before it left it and returns it, changed or not; it may
not touch the session. Features plug in here rather than into the loop: images hidden from a model
that cannot see them, the plan-mode note, the thinking level (acp builds the chain for each turn).
The strict history comes last, always, so no step can send a provider what it would refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..tools import openai_schema
from .history_rules import strict_messages

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
        for step in self.steps:
            request = step(session, request)
        request.messages = strict_messages(request.messages)
        return request
