"""One skill in the Agent Skills format: a folder with SKILL.md (YAML frontmatter, Markdown body).

Validation follows agentskills.io: name 1-64 chars of lowercase letters, digits and single
hyphens, equal to the folder name; description 1-1024 chars; optional license, compatibility
(1-500 chars), metadata (string to string) and allowed-tools. Fields outside the standard are
ignored, so skills written for other hosts still load. Crow reads trigger phrases from
`metadata.triggers` (comma-separated) and from a top-level `triggers:` list (seed 001).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crow_acp.editor.workspace_files import Refused, read_confined
from crow_acp.errors import ConfigError

NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME, MAX_DESCRIPTION, MAX_COMPATIBILITY = 64, 1024, 500
MAX_FILE = 1_000_000
_OPENING = re.compile(r"\A---[ \t]*\n")
_CLOSING = re.compile(r"^---[ \t]*$", re.M)


class SkillError(ConfigError, ValueError):
    """A SKILL.md that breaks the format; the message names the file and the problem."""


@dataclass
class Skill:
    name: str
    description: str
    body: str
    path: Path
    """The SKILL.md file."""
    source: str = "custom"
    """Where it was found: "user", "project" or "custom" (a skills_dir given in Python)."""
    triggers: tuple[str, ...] = ()
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        return self.path.parent

    def catalog_entry(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description, "path": str(self.path)}


def load_skill(path: Path, source: str = "custom", roots: tuple[str, ...] | None = None) -> Skill:
    """Parse and validate one SKILL.md; SkillError says what is wrong.

    With `roots` (a project skill), the file is read as read_file reads: inside the roots. Either way at
    most MAX_FILE bytes are read, and a FIFO or device is refused, not waited on."""
    try:
        read = read_confined(str(path), roots or ("/",), MAX_FILE + 1)
    except (Refused, OSError) as exc:
        raise SkillError(f"{path}: cannot read: {exc}") from exc
    if read.size > MAX_FILE:
        raise SkillError(f"{path}: larger than {MAX_FILE} bytes")
    try:
        text = read.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    frontmatter, body = split_frontmatter(text, path)
    try:
        return from_frontmatter(parse_yaml(frontmatter, path), body, path, source)
    except _Invalid as exc:
        raise SkillError(f"{path}: {exc}") from None


def split_frontmatter(text: str, path: Path) -> tuple[str, str]:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    opening = _OPENING.match(text)
    if opening is None:
        raise SkillError(f"{path}: no YAML frontmatter; the file must start with a '---' line")
    closing = _CLOSING.search(text, opening.end())
    if closing is None:
        raise SkillError(f"{path}: the YAML frontmatter has no closing '---' line")
    return text[opening.end() : closing.start()], text[closing.end() :].strip("\n")


def parse_yaml(frontmatter: str, path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.load(frontmatter, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # safe_load, in C if built
    except yaml.YAMLError as exc:
        hint = " (quote values that contain ': ')" if "mapping values are not allowed" in str(exc) else ""
        raise SkillError(f"{path}: invalid YAML frontmatter: {' '.join(str(exc).split())}{hint}") from None
    if not isinstance(data, dict):
        raise SkillError(f"{path}: the frontmatter must be a YAML mapping of fields, not {type(data).__name__}")
    return data


class _Invalid(SkillError):
    """One field is wrong; load_skill adds the file name."""


def from_frontmatter(data: dict[str, Any], body: str, path: Path, source: str) -> Skill:
    name = _name(data.get("name"), path.parent.name)
    metadata = _metadata(data.get("metadata"))
    return Skill(
        name=name,
        description=_text(data, "description", MAX_DESCRIPTION, required=True) or "",
        body=body,
        path=path,
        source=source,
        triggers=_triggers(data.get("triggers"), metadata.get("triggers")),
        license=_text(data, "license", None),
        compatibility=_text(data, "compatibility", MAX_COMPATIBILITY),
        metadata=metadata,
        allowed_tools=_allowed_tools(data.get("allowed-tools")),
    )


def _name(value: Any, folder: str) -> str:
    if value is None:
        raise _Invalid("missing required field 'name'")
    if not isinstance(value, str):
        raise _Invalid(f"'name' must be a string, not {type(value).__name__}")
    if not (1 <= len(value) <= MAX_NAME) or not NAME.fullmatch(value):
        raise _Invalid(
            f"invalid name {value!r}: use 1-{MAX_NAME} lowercase letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    if value != folder:
        raise _Invalid(f"name {value!r} does not match its folder {folder!r}")
    return value


def _text(data: dict[str, Any], key: str, limit: int | None, *, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise _Invalid(f"missing required field {key!r}")
        return None
    if not isinstance(value, str):
        raise _Invalid(f"{key!r} must be a string, not {type(value).__name__}")
    value = value.strip()
    if not value:
        raise _Invalid(f"{key!r} is empty")
    if limit is not None and len(value) > limit:
        raise _Invalid(f"{key!r} is {len(value)} characters long; the limit is {limit}")
    return value


def _metadata(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Invalid(f"'metadata' must be a mapping of string keys to string values, not {type(value).__name__}")
    for key, item in value.items():
        if isinstance(item, (dict, list)):
            raise _Invalid(f"metadata.{key} must be a string, not {type(item).__name__}")
    # YAML reads `version: 1.0` as a float; the standard means strings, so scalars become strings.
    return {str(key): str(item) for key, item in value.items() if item is not None}


def _triggers(listed: Any, from_metadata: str | None) -> tuple[str, ...]:
    if isinstance(listed, str):
        listed = listed.split(",")
    if listed is not None and (not isinstance(listed, list) or not all(isinstance(p, str) for p in listed)):
        raise _Invalid("'triggers' must be a list of phrases")
    phrases = [*(listed or []), *(from_metadata or "").split(",")]
    unique: dict[str, str] = {}
    for phrase in phrases:
        if cleaned := " ".join(phrase.split()):
            unique.setdefault(cleaned.lower(), cleaned)
    return tuple(unique.values())


def _allowed_tools(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(tool, str) for tool in value):
        return tuple(value)
    raise _Invalid("'allowed-tools' must be a space-separated string or a list of strings")
