"""Whether an accepted form's content satisfies the schema crow asked with (elicitation, schema 1.21).

The editor's answer is not trusted: a field of the wrong type, a missing required field, a choice
not offered or a value out of bounds is refused before the answer reaches an MCP server or the
model. An elicitation schema is a flat object of primitive properties, so the check is small.
"""

from __future__ import annotations

from typing import Any

from ..rpc.shapes.elicitation import ElicitationProperty, ElicitationSchema


def refusal(schema: ElicitationSchema, content: dict[str, Any]) -> str | None:
    """Why `content` does not answer `schema`, or None when it does."""
    for name in schema.required or []:
        if content.get(name) is None:
            return f"the required field {name!r} is missing"
    for name, value in content.items():
        prop = schema.properties.get(name)
        if prop is None:
            return f"{name!r} is not a field of the form"
        if value is not None and (why := _field_refusal(prop, value)):
            return f"{name!r} {why}"
    return None


def _field_refusal(prop: ElicitationProperty, value: Any) -> str | None:
    match prop.type:
        case "string":
            return _string_refusal(prop, value)
        case "boolean":
            return None if isinstance(value, bool) else "must be true or false"
        case "integer" | "number":
            return _number_refusal(prop, value)
        case "array":
            return _choices_refusal(prop, value)


def _string_refusal(prop: ElicitationProperty, value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    choices = _choices(prop)
    if choices is not None and value not in choices:
        return f"must be one of {sorted(choices)}"
    if prop.min_length is not None and len(value) < prop.min_length:
        return f"must have at least {prop.min_length} characters"
    if prop.max_length is not None and len(value) > prop.max_length:
        return f"must have at most {prop.max_length} characters"
    if prop.pattern is not None and not _matches(prop.pattern, value):
        return f"must match {prop.pattern!r}"
    return None


def _number_refusal(prop: ElicitationProperty, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if prop.type == "integer" and not (isinstance(value, int) or value.is_integer()):
        return "must be a whole number"
    if prop.minimum is not None and value < prop.minimum:
        return f"must be at least {prop.minimum:g}"
    if prop.maximum is not None and value > prop.maximum:
        return f"must be at most {prop.maximum:g}"
    return None


def _choices_refusal(prop: ElicitationProperty, value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return "must be a list of choices"
    items = prop.items or {}
    offered = items.get("enum") or [option.get("const") for option in items.get("anyOf") or []]
    if not_offered := [item for item in value if item not in offered]:
        return f"has choices that were not offered: {not_offered}"
    if prop.min_items is not None and len(value) < prop.min_items:
        return f"needs at least {prop.min_items} choices"
    if prop.max_items is not None and len(value) > prop.max_items:
        return f"allows at most {prop.max_items} choices"
    return None


def _choices(prop: ElicitationProperty) -> set[str] | None:
    if prop.enum is not None:
        return set(prop.enum)
    if prop.one_of is not None:
        return {option.const for option in prop.one_of}
    return None


def _matches(pattern: str, value: str) -> bool:
    """RE2, in linear time: a server's pattern must not be able to hang crow on the user's answer (Python's
    `re` backtracks: `(a+)+$` takes exponential time). A pattern RE2 cannot read (backreferences,
    lookaround), or an answer that is not valid Unicode, cannot be checked: not a match."""
    import re2  # lazily: only forms with a pattern need it

    options = re2.Options()
    options.log_errors = False  # a hostile server's pattern is its mistake, not a line for crow.log
    try:
        return re2.compile(pattern.encode(), options).search(value.encode()) is not None
    except (re2.error, UnicodeEncodeError):
        return False
