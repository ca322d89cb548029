"""A scripted model server for tests, benchmarks and demos: OpenAI chat completions, OpenAI Responses
(responses_wire.py) and Anthropic Messages (anthropic_wire.py), one script for all three.

Only the model's intelligence is mocked, never its protocol: the HTTP/1.1 and SSE framing follow
what OpenAI, vLLM, DeepSeek and Anthropic send, so the real client stacks (openai or anthropic ->
httpx2 -> sockets) are exercised end to end, and what a real API refuses is refused.
`python -m crow_acp.testing --script replies.json` serves replies from a file.

May import: anything in crow_acp (it is the top room): the scripted model stands alone, and
FunctionModel drives a whole agent in process.

Also in this room:

    function_model.py  FunctionModel: a model client that runs a script or a Python function in process, without HTTP
    render.py          How a scripted Reply looks on the wire: an OpenAI chat completion, or the chunks of its SSE...
    script.py          Scripted replies from a JSON file, so crow can be tried and shown with no model account
    server.py          A scripted model server for tests and benchmarks: chat completions here; /v1/responses and...
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
