"""@tool: a Tool from a Python function. The schema the model is sent comes from the type hints, the
arguments it sends are validated before the call, and what goes wrong goes back to it as the call's result.
Each test drives the real loop with FunctionModel and reads what crow sent the model."""

from __future__ import annotations

import enum
import threading
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from crow_acp import AcpAgent, FunctionModel, SessionAccess, ToolContext, tool
from crow_acp.config import Config
from crow_acp.errors import ConfigError
from crow_acp.testing import Reply, ToolCall

pytestmark = pytest.mark.anyio


class Unit(enum.Enum):
    CELSIUS = "C"
    FAHRENHEIT = "F"


class Place(BaseModel):
    city: str
    country: str = "NO"


@tool(read_only=True, kind="fetch", title="Forecast for {place}")
async def forecast(
    place: Annotated[Place, Field(description="Where")],
    days: Annotated[int, Field(description="How many days", ge=1, le=7)] = 3,
    unit: Unit = Unit.CELSIUS,
    detail: Literal["short", "long"] = "short",
    hours: list[int] | None = None,
) -> str:
    """The weather forecast for a place.

    It covers up to a week."""
    return f"{place.city}/{place.country}: {days} days in {unit.value}, {detail}, hours={hours}"


async def turn(tmp_path, tools: list[Any], calls: list[ToolCall]) -> FunctionModel:
    """One run in which the model calls `calls`, then ends; the model's requests are what crow sent."""
    model = FunctionModel([Reply(tool_calls=calls), Reply(text="done")])
    agent = AcpAgent(model, tools=tools, config=Config(home=tmp_path))
    try:
        assert (await agent.run("go", cwd=str(tmp_path))).stop_reason == "end_turn"
    finally:
        await agent.shutdown()
    return model


def sent(model: FunctionModel, name: str) -> dict[str, Any]:
    (function,) = [t["function"] for t in model.requests[0]["tools"] if t["function"]["name"] == name]
    return function


def results(model: FunctionModel) -> list[str]:
    return [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]


async def test_the_schema_comes_from_the_name_the_docstring_and_the_type_hints(tmp_path):
    model = await turn(tmp_path, [forecast], [])
    function = sent(model, "forecast")
    assert function["description"] == "The weather forecast for a place.\n\nIt covers up to a week."
    schema = function["parameters"]
    assert schema["required"] == ["place"] and schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["place"]["description"] == "Where"
    assert schema["$defs"]["Place"]["required"] == ["city"]  # a nested model, by reference
    assert props["days"]["description"] == "How many days" and props["days"]["default"] == 3
    assert (props["days"]["minimum"], props["days"]["maximum"]) == (1, 7)
    assert schema["$defs"]["Unit"]["enum"] == ["C", "F"] and props["unit"]["default"] == "C"
    assert props["detail"]["enum"] == ["short", "long"]
    assert {"type": "array", "items": {"type": "integer"}} in props["hours"]["anyOf"]


async def test_arguments_are_validated_into_their_types_before_the_call(tmp_path):
    call = ToolCall("forecast", {"place": {"city": "Oslo"}, "unit": "F", "hours": [6, 18]})
    model = await turn(tmp_path, [forecast], [call])
    assert results(model) == ["Oslo/NO: 3 days in F, short, hours=[6, 18]"]


async def test_a_bad_argument_is_the_calls_error_and_the_function_never_runs(tmp_path):
    ran = []

    def count(n: int) -> str:
        """Count."""
        ran.append(n)
        return str(n)

    bad = [ToolCall("count", {"n": "many"}), ToolCall("forecast", {"days": 9, "detail": "poem", "extra": 1})]
    model = await turn(tmp_path, [tool(count, read_only=True), forecast], bad)
    counted, forecasted = results(model)
    assert counted.startswith("Invalid arguments for count: n: Input should be a valid integer")
    assert "place: Field required" in forecasted and "days: Input should be less than or equal to 7" in forecasted
    assert "detail: Input should be 'short' or 'long'" in forecasted and "extra: Extra inputs" in forecasted
    assert ran == []


async def test_context_and_session_are_injected_and_not_shown_to_the_model(tmp_path):
    seen = []

    @tool(read_only=True)
    def where(context: ToolContext, session: SessionAccess, name: str) -> str:
        """Where the session runs."""
        seen.append((context.call_id, session.session_id == context.session.session_id))
        return f"{name} in {session.cwd}"

    model = await turn(tmp_path, [where], [ToolCall("where", {"name": "me"})])
    assert list(sent(model, "where")["parameters"]["properties"]) == ["name"]
    assert results(model) == [f"me in {tmp_path}"] and seen == [("call_1", True)]


async def test_a_sync_function_runs_off_the_event_loop(tmp_path):
    threads = []

    def blocking(text: str) -> str:
        """Blocks."""
        threads.append(threading.current_thread() is threading.main_thread())
        return text.upper()

    model = await turn(tmp_path, [tool(blocking, read_only=True)], [ToolCall("blocking", {"text": "hi"})])
    assert results(model) == ["HI"] and threads == [False]


async def test_a_function_that_raises_is_the_calls_error_and_the_turn_goes_on(tmp_path):
    def broken(path: str) -> str:
        """Fails."""
        raise FileNotFoundError(f"no file {path}")

    model = await turn(tmp_path, [tool(broken, read_only=True)], [ToolCall("broken", {"path": "a.txt"})])
    assert results(model) == ["FileNotFoundError: no file a.txt"]
    assert model.requests[1]["messages"][-1]["role"] == "tool"  # the history stays a valid chat


async def test_values_that_are_not_text_reach_the_model_as_json(tmp_path):
    @tool(read_only=True)
    async def lookup(key: str) -> dict[str, Any]:
        """Look up."""
        return {"key": key, "place": Place(city="Bergen")}

    model = await turn(tmp_path, [lookup], [ToolCall("lookup", {"key": "k"})])
    assert results(model) == ['{"key":"k","place":{"city":"Bergen","country":"NO"}}']


def test_the_decorator_keeps_the_function_callable_and_covers_function_tool():
    assert forecast.read_only and forecast.kind == "fetch"
    assert forecast.view({"place": "Oslo"}).title == "Forecast for Oslo"
    assert forecast.view({}).title == "forecast"  # a title the arguments cannot fill falls back to the name

    def echo(city: str) -> str:
        return city

    named = tool(name="get-weather", timeout=5)(echo)
    assert named.name == "get-weather" and named.timeout == 5


def test_a_name_openai_refuses_or_an_untyped_parameter_is_an_error_when_made():
    def untyped(x):
        """No hints."""

    with pytest.raises(ConfigError, match="'x' needs a type hint"):
        tool(untyped)
    with pytest.raises(ConfigError, match=r"\^\[a-zA-Z0-9_-\]\{1,64\}\$"):
        tool(name="has space")(forecast.function)
    with pytest.raises(ConfigError, match="must match"):
        tool(name="x" * 65)(forecast.function)
    with pytest.raises(ConfigError, match="tools= takes functions or Tools, not str"):
        AcpAgent(tools=["forecast"], config=Config())
    with pytest.raises(ConfigError, match="two tools are named 'forecast'"):
        AcpAgent(tools=[forecast, forecast.function], config=Config())


async def test_parameters_named_like_pydantics_own_positional_only_and_an_optional_context_work(tmp_path):
    @tool(read_only=True)
    def clash(json: str, model_config: int, /, copy: bool = False, context: ToolContext | None = None) -> str:
        """Names BaseModel has too."""
        return f"{json} {model_config} {copy} {context is not None}"

    model = await turn(tmp_path, [clash], [ToolCall("clash", {"json": "j", "model_config": 2, "copy": True})])
    assert list(sent(model, "clash")["parameters"]["properties"]) == ["json", "model_config", "copy"]
    assert results(model) == ["j 2 True True"]


class Opaque:
    pass


def test_a_type_pydantic_cannot_describe_or_a_hint_that_does_not_resolve_is_a_clear_error_when_made():
    class Local:
        pass

    def takes(thing: Opaque) -> str:
        """Takes."""
        return ""

    def local(thing: Local) -> str:  # a string under `from __future__ import annotations`: not resolvable
        """Takes."""
        return ""

    with pytest.raises(ConfigError, match="tool takes: its parameters cannot make a schema"):
        tool(takes)
    with pytest.raises(ConfigError, match="tool local: its type hints do not resolve: name 'Local' is not defined"):
        tool(local)


async def test_a_sync_function_that_never_returns_times_out_and_the_turn_goes_on(tmp_path):
    release = threading.Event()
    still_blocked = []

    @tool(read_only=True, timeout=0.2)
    def stuck() -> str:
        """Blocks until released."""
        release.wait()
        return "late"

    def after_the_timeout(request: dict[str, Any]) -> Reply:
        still_blocked.append(not release.is_set())  # the turn went on without waiting for the thread
        release.set()
        return Reply(text="done")

    watchdog = threading.Timer(60, release.set)  # a turn that waits for the thread fails below instead of hanging
    watchdog.start()
    model = FunctionModel([Reply(tool_calls=[ToolCall("stuck", {})]), after_the_timeout])
    agent = AcpAgent(model, tools=[stuck], config=Config(home=tmp_path))
    try:
        await agent.run("go", cwd=str(tmp_path))
    finally:
        release.set()
        watchdog.cancel()
        await agent.shutdown()
    assert still_blocked == [True] and results(model) == ["The tool timed out after 0.2 s."]
