"""What the editor tools share: client capability checks, output truncation, error results."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar, overload

from acp import RequestError

from ..api import ToolContext
from ..events import ToolResult
from ..util.secrets import key_values, redact, redact_json
from .paths import ToolError

MAX_OUTPUT = 30_000
"""Characters of tool output the model gets; the middle of longer output is cut."""


ClientCapability = Literal["read_text_file", "write_text_file", "terminal"]


def client_can(context: ToolContext, capability: ClientCapability) -> bool:
    """Whether the attached client advertised `read_text_file`, `write_text_file` or `terminal`."""
    caps = context.client_capabilities
    if context.client is None or caps is None:
        return False
    match capability:
        case "terminal":
            return bool(caps.terminal)
        case "read_text_file":
            return bool(caps.fs and caps.fs.read_text_file)
        case "write_text_file":
            return bool(caps.fs and caps.fs.write_text_file)


def truncate(text: str, limit: int = MAX_OUTPUT) -> str:
    """Keep the head and the tail (where errors usually are), with a visible marker between; no key in either."""
    text = redact(text)  # before the cut, which could leave part of a key on either side
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    head = limit // 2
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[head + cut :]}"


def client_error(action: str, exc: RequestError) -> ToolError:
    details = exc.data.get("details") if isinstance(exc.data, dict) else exc.data
    return ToolError(f"The editor could not {action}: {exc}" + (f" ({details})" if details else ""))


R = TypeVar("R", ToolResult, ToolResult | None)
Handler = Callable[[dict[str, Any], ToolContext], Awaitable[R]]


def guarded(handler: Handler[R]) -> Handler[R]:
    """Turn expected failures into error results for the model instead of failed turns."""

    @functools.wraps(handler)
    async def run(arguments: dict[str, Any], context: ToolContext) -> R:
        try:
            return redacted(await handler(arguments, context))
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True)
        except RequestError as exc:
            return ToolResult(str(client_error("carry out the request", exc)), is_error=True)
        except OSError as exc:
            return ToolResult(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), is_error=True)
        except KeyError as exc:
            return ToolResult(f"Missing argument: {exc.args[0]}", is_error=True)
        except (TypeError, ValueError) as exc:
            return ToolResult(f"Invalid arguments: {exc}", is_error=True)

    return run


def redacted(result: R) -> R:
    """The result without crow's model keys (a .env file in the workspace may hold one)."""
    values = key_values()
    if result is None or (
        not any(value in result.text for value in values) and not any(value in repr(result.content) for value in values)
    ):
        return result
    content = [type(item).model_validate(redact_json(item.model_dump(by_alias=True))) for item in result.content or []]
    return dataclasses.replace(result, text=redact_json(result.text), content=content or result.content)


T = TypeVar("T")


FILE_THREADS = 8
"""Threads for file work, apart from asyncio's default pool: long scans queue behind each other, never
behind (or in front of) the rest of crow's thread work."""


@functools.cache
def _file_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(FILE_THREADS, thread_name_prefix="crow-files")


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """Blocking file work in a thread. `work` gets a threading.Event as its last argument, set when the
    call is cancelled, and checks it between chunks: a cancel returns at once and the thread soon stops."""
    stop = threading.Event()
    try:
        return await asyncio.get_running_loop().run_in_executor(_file_pool(), functools.partial(work, *args, stop))
    finally:
        stop.set()


class Stopped(ToolError):
    """File work gave up because its call was cancelled."""


@overload
def int_arg(arguments: dict[str, Any], name: str, default: int, low: int = 1, high: int | None = None) -> int: ...
@overload
def int_arg(
    arguments: dict[str, Any], name: str, default: None, low: int = 1, high: int | None = None
) -> int | None: ...
def int_arg(
    arguments: dict[str, Any], name: str, default: int | None, low: int = 1, high: int | None = None
) -> int | None:
    """An integer argument (models sometimes send "10"), checked against its bounds."""
    value = arguments.get(name, default)
    if value is None:
        return None
    number = int(value)
    if number < low:
        raise ToolError(f"{name} must be at least {low}, got {number}")
    return min(number, high) if high is not None else number
