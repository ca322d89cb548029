"""A scripted model server for tests, benchmarks and demos: OpenAI chat completions, OpenAI Responses
(responses_wire.py) and Anthropic Messages (anthropic_wire.py), one script for all three.

Only the model's intelligence is mocked, never its protocol: the HTTP/1.1 and SSE framing follow
what OpenAI, vLLM, DeepSeek and Anthropic send, so the real client stacks (openai or anthropic ->
httpx2 -> sockets) are exercised end to end, and what a real API refuses is refused.
`python -m crow_acp.testing --script replies.json` serves replies from a file.

May import: anything in crow_acp (it is the top room): the scripted model stands alone, and
FunctionModel drives a whole agent in process.
"""

from .script import ScriptError, load_script
from .server import ScriptedModel
from .wire import Entry, Fault, Reply, Responder, ToolCall, is_title_request

__all__ = [
    "Entry",
    "Fault",
    "Reply",
    "Responder",
    "ScriptError",
    "ScriptedModel",
    "ToolCall",
    "is_title_request",
    "load_script",
]
