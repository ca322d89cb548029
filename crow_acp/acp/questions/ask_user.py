"""The `ask_user` tool: the model asks the user a question, with choices or free text, as an editor form.

Offered only to a client that advertised form elicitation (`elicitation.form`): others never see it
listed. Read-only, of kind "think", so it runs in every mode (plan included) without a permission
question: asking the user changes nothing. Its result is the user's answer, or that they declined
or cancelled, or why crow could not take the answer (elicitation.py).
"""

from __future__ import annotations

import logging
from typing import Any

from ...api import ToolContext
from ...core.session import Session
from ...events import ToolResult
from ...mcp.host import McpHost
from ...tools import FunctionTool
from ..rpc.shapes.elicitation import CreateElicitationRequest, ElicitationSchema
from ..updates.editor_link import EditorLink
from .elicitation import EditorQuestions

log = logging.getLogger(__name__)

NAME = "ask_user"
MAX_QUESTION = 2_000
MAX_CHOICES = 20
MAX_CHOICE = 200
MAX_ANSWER = 10_000
DECLINED = "The user declined to answer."
CANCELLED = "The user cancelled the question."
PARAMETERS = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question, in a sentence or two."},
        "choices": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The answers the user picks from; leave out for a free-text answer.",
        },
    },
    "required": ["question"],
}
DESCRIPTION = (
    "Ask the user a question and wait for the answer: a choice among `choices`, or free text without them. "
    "Use it when you need a decision or a fact only the user has; the user may decline."
)


def offer_questions(session: Session, editor: EditorLink, timeout: float) -> None:
    """Let the session's MCP servers ask the user through the editor, and offer `ask_user` when it shows forms."""
    questions = EditorQuestions(session.id, editor, timeout, session.emit)
    McpHost.of(session.mcp).elicitor = questions
    if questions.can_ask("form"):
        session.local_tools[NAME] = ask_user_tool(questions, timeout)


def ask_user_tool(questions: EditorQuestions, timeout: float) -> FunctionTool:
    async def ask(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            question, schema = form_of(arguments)
        except ValueError as exc:
            return ToolResult(f"Not asked: {exc}.", is_error=True)
        request = CreateElicitationRequest(
            session_id=questions.session_id, tool_call_id=context.call_id, mode="form", message=question,
            requested_schema=schema,
        )  # fmt: skip
        answer = await questions.ask(request)
        if answer.note:
            log.warning("ask_user: %s", answer.note)
            return ToolResult(answer.note, is_error=True)
        if answer.action == "accept":
            return ToolResult(f"The user answered: {(answer.content or {}).get('answer', '')}")
        return ToolResult(DECLINED if answer.action == "decline" else CANCELLED)

    return FunctionTool(
        NAME, DESCRIPTION, PARAMETERS, ask, read_only=True, kind="think", title=lambda _: "Question for you",
        timeout=timeout + 5,  # the question's own deadline ends it first, with its answer
    )  # fmt: skip


def form_of(arguments: dict[str, Any]) -> tuple[str, ElicitationSchema]:
    """The question and its one-field form; ValueError says what the model got wrong."""
    question, choices = arguments.get("question"), arguments.get("choices")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("`question` must be a non-empty text")
    if len(question) > MAX_QUESTION:
        raise ValueError(f"`question` has at most {MAX_QUESTION} characters")
    answer: dict[str, Any] = {"type": "string", "title": "Answer", "maxLength": MAX_ANSWER}
    if choices is not None:
        if not isinstance(choices, list) or not choices or len(choices) > MAX_CHOICES:
            raise ValueError(f"`choices` must be a list of 1 to {MAX_CHOICES} answers")
        if not all(isinstance(c, str) and c.strip() and len(c) <= MAX_CHOICE for c in choices):
            raise ValueError(f"each choice must be a non-empty text of at most {MAX_CHOICE} characters")
        answer = {"type": "string", "title": "Answer", "enum": list(dict.fromkeys(choices))}
    schema = {"type": "object", "properties": {"answer": answer}, "required": ["answer"]}
    return question, ElicitationSchema.model_validate(schema)
