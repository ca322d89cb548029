"""Import the ACP SDK's schema without pydantic reading its source for field docstrings.

acp.schema's ~270 models ask pydantic for attribute docstrings (`use_attribute_docstrings`): at import,
pydantic finds each class's source and tokenizes it, about 170 ms of every crow start-up (measured:
importing acp.schema took 0.58 s, 0.41 s without). Those docstrings only become field descriptions in
JSON schemas, which crow never generates from ACP's models. The extraction is off for this one import
only: models defined later (a plugin tool's arguments, say) keep theirs.
"""

from __future__ import annotations

import sys


def import_schema() -> None:
    """Import acp.schema (once), skipping field-docstring extraction while it loads. Call it before any
    thread that defines pydantic models starts: the switch is process-wide while the import runs."""
    if "acp.schema" in sys.modules:
        return
    from pydantic._internal import _fields

    # pydantic's internals: should a release rename this, the schema loads as it always did.
    extract = getattr(_fields, "extract_docstrings_from_cls", None)
    if extract is not None:
        _fields.extract_docstrings_from_cls = _no_docstrings
    try:
        import acp.schema  # noqa: F401
    finally:
        if extract is not None:
            _fields.extract_docstrings_from_cls = extract


def _no_docstrings(cls: type, use_inspect: bool = False) -> dict[str, str]:
    return {}
