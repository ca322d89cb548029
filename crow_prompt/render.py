"""Strict Jinja2 rendering: a typo in a template is an error that names the variable, never a blank."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any

from crow_acp.errors import ConfigError

if TYPE_CHECKING:
    import jinja2

DEFAULT_LABEL = "crow_prompt default template"
_TEMPLATE_FILE = "<template>"  # the file name Jinja gives templates made from strings


class PromptTemplateError(ConfigError):
    """A system prompt template that cannot render; the message names the template and the problem."""


def default_source() -> str:
    return resources.files("crow_prompt").joinpath("templates/system.md").read_text(encoding="utf-8")


def check(source: str, label: str, known: Iterable[str]) -> None:
    """Fail on syntax errors and on top-level variables the renderer will not supply."""
    from jinja2 import TemplateSyntaxError

    try:
        unknown = _parsed(source)[1] - set(known)
    except TemplateSyntaxError as exc:
        raise PromptTemplateError(f"{label}, line {exc.lineno}: {exc.message}") from exc
    if unknown:
        names = ", ".join(repr(name) for name in sorted(unknown))
        raise PromptTemplateError(f"{label}: unknown variable {names}; available: {', '.join(sorted(known))}")


def render(source: str, variables: dict[str, Any], label: str) -> str:
    """Render `source` with StrictUndefined; PromptTemplateError says where and what went wrong."""
    from jinja2 import TemplateError

    check(source, label, variables)
    try:
        return _parsed(source)[0].render(variables).strip() + "\n"
    except TemplateError as exc:
        raise PromptTemplateError(f"{label}{_line(exc)}: {exc}") from exc


def _line(exc: BaseException) -> str:
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == _TEMPLATE_FILE]
    return f", line {lines[-1]}" if lines else ""


@functools.lru_cache(maxsize=16)
def _parsed(source: str) -> tuple[jinja2.Template, frozenset[str]]:
    """The template and its top-level variables, from one parse: every session renders the prompt again."""
    from jinja2 import meta

    environment = _environment()
    tree = environment.parse(source)
    variables = frozenset(meta.find_undeclared_variables(tree))  # before compiling, which may rewrite the tree
    return environment.from_string(tree), variables


@functools.cache
def _environment() -> jinja2.Environment:
    import jinja2

    # autoescape off: the output is a prompt, not HTML. trim/lstrip keep {% %} lines from leaving blanks.
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, trim_blocks=True, lstrip_blocks=True)
