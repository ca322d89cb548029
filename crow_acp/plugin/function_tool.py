"""`@tool`: a Tool made from a Python function (sync or async), as pydantic-ai's tools are.

    @tool
    def weather(city: Annotated[str, Field(description="A city name")], unit: Literal["C", "F"] = "C") -> str:
        \"\"\"The weather in a city.\"\"\"

The tool's name is the function's, its description the docstring, and its JSON schema comes from the
type hints through pydantic (Annotated descriptions, defaults, Literal, enums, nested models, lists).
The model's arguments are validated before the call; a validation error, or an exception the function
raises, goes back to the model as the call's error result. A parameter annotated ToolContext or
SessionAccess is given the call's context (or its session) and is not shown to the model. A sync
function runs in a worker thread, so it never blocks the event loop.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints, overload

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import to_json

from ..errors import ConfigError
from ..events import ToolKind, ToolResult, ToolView
from .session import SessionAccess, ToolContext

NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$."""

MAX_ERROR = 4000
"""Characters of a raised exception's text the model reads."""

Title = str | Callable[[dict[str, Any]], str]
"""A call's title in the editor: a str.format template over the arguments ("Weather in {city}"), or a function."""


@dataclass
class PythonTool:
    """The Tool `@tool` makes; calling it calls the function itself, as before it was decorated."""

    function: Callable[..., Any]
    name: str
    description: str
    parameters: dict[str, Any]
    arguments: type[BaseModel] = field(repr=False)
    """The pydantic model the model's arguments are validated with."""
    injected: dict[str, type] = field(default_factory=dict, repr=False)
    """Parameters crow fills in (ToolContext or SessionAccess), by name."""
    positional: tuple[str, ...] = field(default=(), repr=False)
    """The positional-only parameters, in order: passed by position."""
    read_only: bool = False
    kind: ToolKind = "other"
    title: Title | None = None
    timeout: float | None = None
    """Seconds the loop allows a call; None means the configured tool timeout."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def view(self, arguments: dict[str, Any]) -> ToolView:
        title = self.name
        if self.title is not None:
            try:
                title = self.title.format(**arguments) if isinstance(self.title, str) else self.title(arguments)
            except (KeyError, IndexError, TypeError, ValueError):  # arguments the model got wrong: the call says so
                title = self.name
        return ToolView(title=str(title), kind=self.kind)

    async def preview(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult | None:
        return None

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        try:
            given = self.arguments.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(f"Invalid arguments for {self.name}: {_brief(exc)}", is_error=True)
        values = {field.alias or name: getattr(given, name) for name, field in type(given).model_fields.items()}
        for name, kind in self.injected.items():
            values[name] = context if kind is ToolContext else context.session
        args = [values.pop(name) for name in self.positional if name in values]
        try:
            if inspect.iscoroutinefunction(self.function):
                value = await self.function(*args, **values)
            else:  # a thread the loop does not wait for when the call times out or is cancelled
                work = functools.partial(self.function, *args, **values)
                value = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            if inspect.isawaitable(value):  # a sync callable that returned a coroutine
                value = await value
        except Exception as exc:  # boundary with the user's function: the model reads what went wrong
            said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return ToolResult(said[:MAX_ERROR], is_error=True)
        return _result(value)


@overload
def tool(function: Callable[..., Any], /) -> PythonTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    kind: ToolKind = "other",
    title: Title | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], PythonTool]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    kind: ToolKind = "other",
    title: Title | None = None,
    timeout: float | None = None,
) -> PythonTool | Callable[[Callable[..., Any]], PythonTool]:
    """`@tool` or `@tool(read_only=True, kind="read", title="Reading {path}")`: a Tool from the function.

    A bad name or a parameter without a type hint is a ConfigError when the tool is made, not when it is called.
    """

    def make(fn: Callable[..., Any]) -> PythonTool:
        if isinstance(fn, PythonTool):
            return fn
        tool_name: str = name or str(getattr(fn, "__name__", ""))  # a partial has no name: pass name=
        if not NAME.fullmatch(tool_name):
            raise ConfigError(f"tool name {tool_name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$ (pass @tool(name=...))")
        model, injected = _arguments(fn, tool_name)
        text: str = description if description is not None else inspect.getdoc(fn) or tool_name
        params = inspect.signature(fn).parameters.values()
        positional = tuple(p.name for p in params if p.kind is p.POSITIONAL_ONLY)
        return PythonTool(
            fn, tool_name, text, _schema(model, tool_name), model, injected, positional, read_only, kind, title, timeout
        )  # fmt: skip

    return make(function) if function is not None else make


def as_tool(value: Any) -> Any:
    """A plain function given in tools= becomes a PythonTool; a Tool stays as it is; anything else is refused."""
    if inspect.isroutine(value) or isinstance(value, functools.partial):
        return tool(value)
    if all(hasattr(value, part) for part in ("name", "description", "parameters", "call", "view")):
        return value
    raise ConfigError(f"tools= takes functions or Tools, not {type(value).__name__} ({value!r:.60})")


def _arguments(fn: Callable[..., Any], tool_name: str) -> tuple[type[BaseModel], dict[str, type]]:
    """The pydantic model of the parameters the model fills in, and those crow injects. Each field is named
    p0, p1, ... with the parameter's name as its alias, so a parameter called `json` or `model_config` is
    no clash with BaseModel's own attributes."""
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # boundary with the user's annotations (a name that does not resolve)
        raise ConfigError(f"tool {tool_name}: its type hints do not resolve: {exc}") from exc
    fields: dict[str, Any] = {}
    injected: dict[str, type] = {}
    for n, param in enumerate(inspect.signature(fn).parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        hint = hints.get(param.name, param.annotation)
        if (given := _injected(hint)) is not None:
            injected[param.name] = given
            continue
        if hint is inspect.Parameter.empty:
            raise ConfigError(f"tool {tool_name}: parameter {param.name!r} needs a type hint (it makes the schema)")
        default = ... if param.default is param.empty else param.default
        fields[f"p{n}"] = (Annotated[hint, Field(alias=param.name)], default)
    try:
        return create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields), injected
    except Exception as exc:  # boundary with the user's types: pydantic says which one it cannot check
        raise ConfigError(f"tool {tool_name}: its parameters cannot make a schema: {exc}") from exc


def _injected(hint: Any) -> type | None:
    """ToolContext or SessionAccess, also as `X | None`: what crow gives the parameter instead of the model."""
    options = [a for a in get_args(hint) if a is not type(None)] if get_origin(hint) in (Union, UnionType) else [hint]
    given = options[0] if len(options) == 1 else None
    return given if given in (ToolContext, SessionAccess) else None


def _schema(model: type[BaseModel], tool_name: str) -> dict[str, Any]:
    try:
        schema = model.model_json_schema()
    except Exception as exc:  # boundary with the user's types (an arbitrary class pydantic cannot describe)
        raise ConfigError(f"tool {tool_name}: its parameters cannot make a JSON schema: {exc}") from exc
    schema.pop("title", None)
    return schema


def _brief(exc: ValidationError) -> str:
    """`city: Field required; unit: Input should be 'C' or 'F'`: one line the model can act on."""
    parts = []
    for error in exc.errors(include_url=False)[:10]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(text=value)
    if value is None:
        return ToolResult(text="")
    try:
        return ToolResult(text=to_json(value).decode())
    except Exception:  # boundary: a value pydantic cannot serialise is still shown to the model as text
        return ToolResult(text=str(value))
