"""The shared blackboard of one MultiAgent editor session (the seeds' blackboard, or ProjectState).

    board = Blackboard({"plan", "blackboard", ...}, values)     one per editor session of a graph
    agent.join_blackboard(session_id, board)                     each member's context joins it

A member's context is then a MemberContext: a dict whose shared keys are the board's. Every way
of changing a shared key, in any member (`ctx[k] = v`, `ctx |= {...}`, `del ctx[k]`, `pop`,
`popitem`, `update`, `setdefault`, `clear`), changes it in every member at once and saves every
member's session, so any one of them restores the board. Other keys stay private to the member's
session: they hold per-session bookkeeping (skills injected, compaction counters) that must not leak.

Values are shared, not copied: a change made inside a value is seen by every member at once. The
"blackboard" key is a SessionBlackboard in every member (SessionAccess.blackboard, crow_acp/plugin/blackboard.py):
each change inside it sets the key again, so it is stored at once. Each member's store has its own
queue, so a change marks the board `unflushed`, and the MultiAgent makes every member's writes
durable before the editor's next update (Graph.flush).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, Self

Saver = Callable[[], None]
_MISSING: Any = object()


class Blackboard(MutableMapping[str, Any]):
    """The shared keys' values, and the member contexts that mirror them."""

    def __init__(self, keys: Iterable[str], values: Mapping[str, Any] | None = None) -> None:
        self.shared_keys = frozenset(keys)
        self._values: dict[str, Any] = {}
        self._members: list[tuple[MemberContext, Saver]] = []
        self.unflushed = False
        """True after a change until the members' stores are flushed (before the editor's next update)."""
        for key, value in (values or {}).items():
            self._check(key)
            self._values[key] = value

    def join(self, context: Mapping[str, Any], save: Saver) -> MemberContext:
        """A member context: the member's private keys from `context`, the board's shared ones."""
        private = {key: value for key, value in context.items() if key not in self.shared_keys}
        member = MemberContext(self, {**private, **self._values})
        self._members.append((member, save))
        return member

    def change(self, values: Mapping[str, Any] | None = None, deleted: Iterable[str] = ()) -> None:
        """Set and delete shared keys in every member, then save every member once."""
        setting, gone = dict(values or {}), [key for key in deleted if key in self._values]
        for key in [*setting, *deleted]:
            self._check(key)
        if not setting and not gone:
            return
        self._values.update(setting)
        for key in gone:
            del self._values[key]
        for member, _ in self._members:
            for key in gone:
                dict.pop(member, key, None)
            dict.update(member, setting)
        for _, save in self._members:
            save()
        self.unflushed = True

    def _check(self, key: str) -> None:
        if key not in self.shared_keys:
            raise KeyError(f"{key!r} is not a shared key of this blackboard (shared: {sorted(self.shared_keys)})")

    # MutableMapping over the shared keys
    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.change({key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self._values:
            raise KeyError(key)
        self.change(deleted=[key])

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Blackboard({self._values!r})"


class MemberContext(dict[str, Any]):
    """One member session's context: a plain dict for private keys, the blackboard for shared ones.

    A dict subclass so that the store serializes it as it is; every mutating method is overridden,
    since dict's C methods (update, |=, setdefault, pop, …) would bypass __setitem__.
    """

    def __init__(self, board: Blackboard, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.board = board

    def _split(self, items: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        shared = {k: v for k, v in items.items() if k in self.board.shared_keys}
        return shared, {k: v for k, v in items.items() if k not in shared}

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def update(self, *args: Any, **kwargs: Any) -> None:
        shared, private = self._split(dict(*args, **kwargs))
        dict.update(self, private)
        self.board.change(shared)

    def __ior__(self, other: Any) -> Self:  # type: ignore[override,misc]  # dict's |= would bypass the board
        self.update(other)
        return self

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._delete([key])

    def pop(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self:
            if default is _MISSING:
                raise KeyError(key)
            return default
        value = self[key]
        self._delete([key])
        return value

    def popitem(self) -> tuple[str, Any]:
        if not self:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self))
        value = self[key]
        self._delete([key])
        return key, value

    def clear(self) -> None:
        self._delete(list(self))

    def _delete(self, keys: list[str]) -> None:
        for key in keys:
            if key not in self.board.shared_keys:
                dict.pop(self, key, None)
        self.board.change(deleted=[key for key in keys if key in self.board.shared_keys])
