"""The session's blackboard: a JSON mapping that stores itself on every change, nested ones included.

    board = session.blackboard               (the same object as session.get_context("blackboard"))
    board["findings"] = []                   stored
    board["findings"].append({"file": "a"})  stored: nested dicts and lists come back as tracking views
    board["d"]["k"] = 1; board |= {"x": 2}; del board["x"]; board.pop("d"); board.setdefault(...)

The data stays plain dicts and lists inside the session's context (what the store serializes); the
views only wrap it. Every change goes through `commit`, which sets the context key again: the
session is saved then (in a MultiAgent, every member's session, and the others see it at once),
so the change is stored before the editor's next update. A value that is not JSON is refused when
it is written (NotJsonError), not later in the store; what is written is a copy, so a later change
to the caller's own object cannot bypass the board.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, MutableMapping, MutableSequence
from typing import Any, Self, SupportsIndex, overload

from ..errors import StoreError
from ..util.text import clean_text

_MISSING: Any = object()


class NotJsonError(StoreError, TypeError):
    """A value crow must store is not JSON (dicts with str keys, lists, str, int, float, bool, None)."""


def plain_json(value: Any, where: str = "value") -> Any:
    """A plain copy of a JSON value (tracking views unwrapped, strings valid Unicode); NotJsonError if it is not one."""
    return _plain(value, where, set())


def _plain(value: Any, where: str, path: set[int]) -> Any:
    if isinstance(value, TrackedDict | TrackedList):
        value = value.data
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJsonError(f"{where} is {value}, which JSON cannot hold")
        return value
    if isinstance(value, str):
        return clean_text(value)
    if id(value) in path:
        raise NotJsonError(f"{where} contains itself")
    if isinstance(value, dict):
        if (bad := next((key for key in value if not isinstance(key, str)), _MISSING)) is not _MISSING:
            raise NotJsonError(f"{where} has the key {bad!r}: JSON keys are strings")
        path.add(id(value))
        copied = {clean_text(k): _plain(v, f"{where}[{k!r}]", path) for k, v in value.items()}
    elif isinstance(value, list | tuple):
        path.add(id(value))
        copied = [_plain(v, f"{where}[{i}]", path) for i, v in enumerate(value)]  # type: ignore[assignment]
    else:
        raise NotJsonError(
            f"{where} is a {type(value).__name__}, which is not JSON: store dicts, lists, str, int, float, bool or None"
        )
    path.discard(id(value))
    return copied


def _view(value: Any, commit: Callable[[], None], where: str) -> Any:
    """A nested container as a tracking view; anything else as it is."""
    if isinstance(value, dict):
        return TrackedDict(value, commit, where)
    if isinstance(value, list):
        return TrackedList(value, commit, where)
    return value


class TrackedDict(MutableMapping[str, Any]):
    """A dict of the blackboard: reads see it, every change is stored (commit)."""

    def __init__(self, data: dict[str, Any], commit: Callable[[], None], where: str) -> None:
        self._data, self._commit, self._where = data, commit, where

    @property
    def data(self) -> dict[str, Any]:
        """The plain dict underneath (do not change it directly: that would not be stored)."""
        return self._data

    def _writable(self) -> dict[str, Any]:
        return self._data

    def __getitem__(self, key: str) -> Any:
        return _view(self.data[key], self._commit, f"{self._where}[{key!r}]")

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        del self._writable()[key]
        self._commit()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.data))

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __eq__(self, other: object) -> bool:
        return self.data == (other.data if isinstance(other, TrackedDict) else other)

    def __repr__(self) -> str:
        return repr(self.data)

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Every key written, then stored once."""
        items = dict(other, **kwargs)
        if (bad := next((key for key in items if not isinstance(key, str)), _MISSING)) is not _MISSING:
            raise NotJsonError(f"{self._where} cannot have the key {bad!r}: JSON keys are strings")
        copied = {key: plain_json(value, f"{self._where}[{key!r}]") for key, value in items.items()}
        self._writable().update(copied)
        self._commit()

    def __ior__(self, other: Any) -> Self:
        self.update(other)
        return self

    def __or__(self, other: Any) -> dict[str, Any]:
        return {**self.snapshot(), **plain_json(dict(other))}

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value at `key` (as a tracking view), set to a copy of `default` first when missing."""
        if key not in self.data:
            self[key] = default
        return self[key]

    def pop(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.data:
            if default is _MISSING:
                raise KeyError(key)
            return default
        value = self._writable().pop(key)
        self._commit()
        return value

    def clear(self) -> None:
        if self.data:
            self._writable().clear()
            self._commit()

    def snapshot(self) -> dict[str, Any]:
        """A plain deep copy, for json.dumps or to keep as it stands."""
        copied: dict[str, Any] = plain_json(self.data, self._where)
        return copied

    def __reduce__(self) -> Any:  # a copy or a pickle of a view is its plain data
        return dict, (self.snapshot(),)


class TrackedList(MutableSequence[Any]):
    """A list of the blackboard: reads see it, every change is stored (commit)."""

    def __init__(self, data: list[Any], commit: Callable[[], None], where: str) -> None:
        self._data, self._commit, self._where = data, commit, where

    @property
    def data(self) -> list[Any]:
        """The plain list underneath (do not change it directly: that would not be stored)."""
        return self._data

    @overload
    def __getitem__(self, index: SupportsIndex) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return plain_json(self._data[index], self._where)  # a slice is a copy, as a list's is
        return _view(self._data[index], self._commit, f"{self._where}[{index}]")

    def __setitem__(self, index: Any, value: Any) -> None:
        where = f"{self._where}[{index}]"
        self._data[index] = plain_json(list(value), where) if isinstance(index, slice) else plain_json(value, where)
        self._commit()

    def __delitem__(self, index: Any) -> None:
        del self._data[index]
        self._commit()

    def __len__(self) -> int:
        return len(self._data)

    def insert(self, index: int, value: Any) -> None:
        self._data.insert(index, plain_json(value, f"{self._where}[{index}]"))
        self._commit()

    def extend(self, values: Iterable[Any]) -> None:
        """Every value appended, then stored once."""
        self._data.extend(plain_json(list(values), self._where))
        self._commit()

    def __iadd__(self, values: Iterable[Any]) -> Self:
        self.extend(values)
        return self

    def pop(self, index: int = -1) -> Any:
        value = self._data.pop(index)
        self._commit()
        return value

    def sort(self, *, key: Callable[[Any], Any] | None = None, reverse: bool = False) -> None:
        self._data.sort(key=key, reverse=reverse)
        self._commit()

    def __eq__(self, other: object) -> bool:
        return self._data == (other.data if isinstance(other, TrackedList) else other)

    def __repr__(self) -> str:
        return repr(self._data)

    def reverse(self) -> None:
        self._data.reverse()
        self._commit()

    def snapshot(self) -> list[Any]:
        """A plain deep copy, for json.dumps or to keep as it stands."""
        copied: list[Any] = plain_json(self._data, self._where)
        return copied

    def __reduce__(self) -> Any:
        return list, (self.snapshot(),)


class SessionBlackboard(TrackedDict):
    """The session's blackboard: the context key "blackboard" as a mapping that stores every change.

    It reads the key each time, so a member of a MultiAgent sees what another wrote at once, and a
    `set_context("blackboard", ...)` replaces what it shows."""

    def __init__(self, load: Callable[[], Any], store: Callable[[dict[str, Any]], None]) -> None:
        self._load, self._store = load, store
        super().__init__({}, self._commit_root, "blackboard")

    @property
    def data(self) -> dict[str, Any]:
        current = self._load()
        return current if isinstance(current, dict) else {}

    def _writable(self) -> dict[str, Any]:
        current = self._load()
        if current is None:  # nothing written yet: the board begins empty
            self._store({})
        elif not isinstance(current, dict):
            raise NotJsonError(
                f"the context key 'blackboard' holds a {type(current).__name__}, not a mapping; "
                "set_context('blackboard', {...}) replaces it"
            )
        return self.data

    def _commit_root(self) -> None:
        self._store(self.data)
