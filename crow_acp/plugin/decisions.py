"""What a before_tool / after_tool callback sees of a call, and what before_tool may decide."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..events import ToolKind, ToolResult


@dataclass(frozen=True)
class ToolCallInfo:
    """One tool call as a before_tool / after_tool callback sees it (the tool's own description included)."""

    id: str
    name: str
    arguments: dict[str, Any]
    """The arguments as the model sent them, or as an earlier before_tool callback rewrote them."""
    title: str
    kind: ToolKind
    read_only: bool
    """What the tool says about itself: a claim, not a proof (plan mode does not trust it alone)."""
    description: str = ""
    locations: tuple[str, ...] = ()


# What a before_tool callback returns (None means Allow()).
@dataclass(frozen=True)
class Allow:
    """Let the call go on to the next step (the next guard, then the permission policy)."""


@dataclass(frozen=True)
class Refuse:
    """Do not run the call; the model gets `reason` as the tool's error result."""

    reason: str


@dataclass(frozen=True)
class Rewrite:
    """Go on with these arguments instead; later steps, the permission prompt and the tool see them."""

    arguments: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """Do not run the tool: this is its result (a cache hit, a canned reply). Nobody is asked."""

    result: ToolResult | str


ToolDecision = Allow | Refuse | Rewrite | Answer
