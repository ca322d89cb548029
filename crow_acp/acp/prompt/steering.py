"""`_session/steering`: a message for the turn that is running (claude-agent-acp's request and answer).

    {sessionId, prompt: ContentBlock[], _meta?: {steering: {idleBehavior: "promptRequired"}}}
      -> {outcome: "injected" | "startedNewTurn" | "promptRequired"}

While a model turn runs, the message becomes a user message that reaches the model at its next call
(core/steering.py): after the running tool calls have their results, or at once by cutting off the reply
streaming now. The answer is `injected` as soon as the turn has it. When no model turn runs, the message
is a new prompt, queued as a session/prompt sent now would be, and the answer (`startedNewTurn`) comes at
once: the turn's updates follow, and it has no answer of its own. With `idleBehavior: "promptRequired"`
nothing is started, and the client sends it as a session/prompt itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from acp import RequestError
from acp.schema import PromptRequest
from pydantic import ValidationError

from ...core.session import Session
from ...core.steering import Steer
from ...errors import PromptRefused
from ...history import EntryMeta
from ...util.secrets import redact_json
from .message import as_dicts, model_content, stored_blocks

log = logging.getLogger(__name__)
METHOD = "session/steering"
"""The extension method's name as the SDK hands it to `ext_method` (the leading "_" taken off)."""
MAX_BLOCKS = 1000


class Steering:
    def __init__(
        self,
        live: Callable[[str], Awaitable[Session]],
        prompt: Callable[[list[Any], str], Coroutine[Any, Any, Any]],
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
    ) -> None:
        self._live = live
        self._prompt = prompt
        self._spawn = spawn

    async def steer(self, params: Any) -> dict[str, Any]:
        session_id, blocks, prompt_required = _parsed(params)
        session = await self._live(session_id)
        inbox = session.control.steering
        if inbox.accepting:
            try:
                content = await model_content(session, blocks)
            except PromptRefused as refused:  # nothing is recorded: the client hears why
                raise RequestError.invalid_params({"reason": str(refused)}) from refused
            meta = EntryMeta("prompt", blocks=redact_json(stored_blocks(blocks)))
            if inbox.offer(Steer({"role": "user", "content": content}, meta)):
                return {"outcome": "injected"}
        if prompt_required:  # the turn ended meanwhile, or none ran: the client's to send
            return {"outcome": "promptRequired"}
        self._spawn(self._detached(blocks, session_id))
        return {"outcome": "startedNewTurn"}

    async def _detached(self, blocks: list[dict[str, Any]], session_id: str) -> None:
        try:
            await self._prompt(blocks, session_id)
        except Exception:  # a turn nobody awaits: its failure goes to the log (the editor saw its updates)
            log.exception("the turn a steering message started failed")


def _parsed(params: Any) -> tuple[str, list[dict[str, Any]], bool]:
    """(session id, blocks, whether idleBehavior is "promptRequired"); a clear invalid-params error else."""
    if not isinstance(params, dict):
        raise RequestError.invalid_params({"reason": "steering params must be an object"})
    session_id, blocks = params.get("sessionId"), params.get("prompt")
    if not isinstance(session_id, str) or not session_id:
        raise RequestError.invalid_params({"reason": "steering needs a non-empty sessionId"})
    if not isinstance(blocks, list) or not blocks or len(blocks) > MAX_BLOCKS:
        raise RequestError.invalid_params({"reason": f"steering needs a prompt of 1 to {MAX_BLOCKS} content blocks"})
    try:  # the blocks as session/prompt takes them: the SDK's own models
        blocks = as_dicts(PromptRequest.model_validate({"sessionId": session_id, "prompt": blocks}).prompt)
    except ValidationError as exc:
        raise RequestError.invalid_params({"reason": f"invalid prompt blocks: {exc.errors()[0]['msg']}"}) from None
    meta = params.get("_meta")
    steering = meta.get("steering") if isinstance(meta, dict) else None
    idle = steering.get("idleBehavior") if isinstance(steering, dict) else None
    if idle not in (None, "promptRequired"):
        raise RequestError.invalid_params({"reason": f"unsupported steering idleBehavior {str(idle)[:40]!r}"})
    return session_id, blocks, idle == "promptRequired"
