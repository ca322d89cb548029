"""pydantic's validation errors for config.toml, said in TOML's words.

"`[permission]`: unknown table; did you mean `[permissions]`?" rather than "permission: Extra inputs
are not permitted". The schema is walked along each error's location to tell tables from keys and
to find the valid names near a misspelled one.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError


def closest(word: str, choices: list[str]) -> str | None:
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return found[0] if found else None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The BaseModel inside `X`, `X | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if (found := _model_of(arg)) is not None:
                return found
    return None


def _walk(root: type[BaseModel], loc: tuple[Any, ...]) -> tuple[list[str], type[BaseModel] | None, bool]:
    """Follow loc through the schema: (TOML path of the enclosing table, that table's model, whether
    the last part is a key of a free-form mapping such as [permissions.tools])."""
    path: list[str] = []
    model: type[BaseModel] | None = root
    annotation: Any = None
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if model is not None:
            if last:
                return path, model, False
            field = model.model_fields.get(str(part))
            if field is None:
                return path, model, False
            path.append(str(part))
            annotation, model = field.annotation, _model_of(field.annotation)
            continue
        if typing.get_origin(annotation) is dict:  # a mapping: this part is a user-chosen name
            if last:
                return path, None, True
            path.append(str(part))
            annotation = typing.get_args(annotation)[1]
            model = _model_of(annotation)
            continue
        return path, None, False  # inside a list or a free-form value: report at this table
    return path, model, False


def _table(path: list[str]) -> str:
    return "[" + ".".join(_quote(part) for part in path) + "]"


def _quote(name: str) -> str:
    plain = name.replace("_", "").replace("-", "").isalnum()
    return name if plain else '"' + name.replace('"', '\\"') + '"'


def _value_at(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def describe(exc: ValidationError, data: dict[str, Any], root: type[BaseModel]) -> list[str]:
    """One line per mistake in `data` (validated as `root`), each naming the table and the key."""
    return [_line(root, error, data) for error in exc.errors()]


def _line(root: type[BaseModel], error: Any, data: dict[str, Any]) -> str:
    loc = tuple(error["loc"])
    path, model, _ = _walk(root, loc)
    key = str(loc[-1]) if loc else ""
    kind = error["type"]
    if kind == "extra_forbidden" and model is not None:
        is_table = isinstance(_value_at(data, loc), dict)
        near = closest(key, [name for name in model.model_fields if name != "home"])
        if is_table:
            where = _table([*path, key])
            hint = f"; did you mean `{_table([*path, near])}`?" if near else ""
            return f"`{where}`: unknown table{hint}"
        hint = f"; did you mean `{near}`?" if near else ""
        if not path:
            return f"`{key}`: unknown key at the top level{hint}"
        return f"`{_table(path)}`: unknown key `{key}`{hint}"
    message = error["msg"].removeprefix("Value error, ")
    if kind == "model_type":
        message = "Input should be a table"
    if kind.startswith("literal_error"):
        expected = error.get("ctx", {}).get("expected", "")
        near = closest(str(error.get("input")), [part.strip("' ") for part in expected.replace(" or ", ",").split(",")])
        message += f"; did you mean '{near}'?" if near else ""
    if not loc:
        where = "`config`"
    elif kind == "value_error" and (model is None or key not in model.model_fields):
        where = f"`{_table([*path, key])}`"  # a rule about the whole table, e.g. [mcp_servers.X]
    elif path:
        where = f"`{_table(path)}` `{_quote(key)}`"
    else:
        where = f"`{key}`"
    if kind != "value_error" and not isinstance(error.get("input"), dict):
        message += f" (got {_shown(error.get('input'))})"
    return f"{where}: {message}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
