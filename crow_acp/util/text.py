"""Valid Unicode at every boundary: nothing crow stores, sends or shows holds a lone surrogate.

Python strings can hold lone surrogates (JSON `"\\ud800"` decodes to one), but UTF-8 cannot: one
such character in a session's history would make every later model request and every replay
fail to encode, and the session would be poisoned for good. So text is repaired where it enters:
the wire (prompts, client answers), the model stream, tool results and callbacks' messages (all
recorded through Session.record), and a stored history on load.

Repair keeps what can be kept: a high and a low surrogate that arrived as two separate escapes
become the one character they encode; a lone half becomes U+FFFD.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..history import EntryMeta


def clean_text(text: str) -> str:
    """`text` with surrogate pairs joined and lone surrogates replaced (the same object when valid)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 round trip: a pair encodes to the 4 bytes of its character, a lone half fails to decode.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean_value(value: Any) -> Any:
    """A JSON-like value with every string (keys too) cleaned.

    Containers are repaired in place and returned, so the common case, nothing wrong, costs no
    copy. Iterative, not recursive: a value nested deeper than the recursion limit is cleaned too.
    """
    if isinstance(value, str):
        return clean_text(value)
    repair(value)
    return value


def repair(value: Any) -> bool:
    """Clean every string inside a list or dict in place; whether anything needed it."""
    changed, stack = False, [value]
    while stack:
        node = stack.pop()
        items = (
            list(enumerate(node)) if isinstance(node, list) else list(node.items()) if isinstance(node, dict) else []
        )
        for key, child in items:
            if isinstance(key, str) and (fixed_key := clean_text(key)) is not key:
                del node[key]
                node[key := fixed_key] = child
                changed = True
            if isinstance(child, str):
                if (fixed := clean_text(child)) is not child:
                    node[key], changed = fixed, True
            elif isinstance(child, (list, dict)):
                stack.append(child)
    return changed


def clean_meta(meta: EntryMeta) -> EntryMeta:
    """Entry metadata with valid Unicode (reasoning, prompt blocks, tool display): the same when valid."""
    from ..history import EntryMeta

    tool = meta.tool
    shown = tool and [tool.name, tool.title, tool.locations, tool.raw_input, tool.content]
    if is_valid(
        [
            meta.blocks,
            meta.message_id,
            meta.reasoning,
            meta.skill,
            meta.other,
            meta.handoff and meta.handoff.source,
            shown,
        ]
    ):
        return meta  # the common case, checked without building the JSON form
    data = meta.to_json()
    return EntryMeta.from_json(data) if repair(data) else meta


def is_valid(value: Any) -> bool:
    """Whether every string in a JSON-like value (keys too) is valid Unicode; nothing is changed."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if clean_text(node) is not node:
                return False
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return True


def cleaned_copy(value: Any) -> Any:
    """A cleaned copy of a JSON-like value, leaving `value` itself alone (others still hold it)."""
    import copy

    return clean_value(copy.deepcopy(value))


class SurrogateJoiner:
    """Joins a surrogate pair the model split across stream chunks.

    Each SSE chunk is its own JSON document, so `"\\ud83d"` in one chunk and `"\\ude00"` in the
    next decode to two lone halves. A high surrogate at the end of a piece waits for the next one.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text, self._held = self._held + piece, ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._held = text[:-1], text[-1]
        return clean_text(text)

    def flush(self) -> str:
        """What is still held at the end of the stream (a lone half, so U+FFFD), or ""."""
        held, self._held = self._held, ""
        return clean_text(held)
