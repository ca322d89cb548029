"""Where an edit would really write, resolved as the write will resolve it, for the permission policy.

A location is taken relative to the cwd, `..` removed, and symlinks inside the roots followed
(`notgit -> .git`, then `notgit/config` is `.git/config`). Both the path as given and the real
path are checked against the protected paths. The real paths go with the call (write_targets):
the write tool writes only those, without following a symlink, so the check holds until the write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ..editor.paths import ToolError, Workspace

if TYPE_CHECKING:
    from ..config.protected import ProtectedPaths
    from ..core.session import Session
    from ..core.turn import PendingCall
    from ..events import ToolView

WRITING_KINDS = frozenset({"edit", "delete", "move"})


async def protected_write(protected: ProtectedPaths, session: Session, call: PendingCall, view: ToolView) -> str | None:
    """The protected path an edit would write (shown in the question), or None; sets call.write_targets."""
    if view.kind not in WRITING_KINDS or not view.locations:
        return None
    workspace = Workspace.of(session.cwd, session.additional_directories)
    resolved = await anyio.to_thread.run_sync(_resolve, workspace, list(view.locations))
    call.write_targets = frozenset(real for _, real in resolved if real is not None)
    roots = [*workspace.roots, *workspace.confined.real_roots]
    for lexical, real in resolved:
        for path in (real, lexical):
            if path is not None and (found := protected.match(path, roots)):
                return found
    return None


def _resolve(workspace: Workspace, locations: list[str]) -> list[tuple[str, str | None]]:
    """(the lexical path, the real path or None when it cannot be resolved) of each location."""
    resolved: list[tuple[str, str | None]] = []
    for location in locations:
        lexical = workspace.lexical(location)
        try:
            real, _ = workspace.confined.real_path(lexical)
        except (ToolError, OSError):  # outside the roots, a loop, unreadable: the write fails the same way
            real = None
        resolved.append((lexical, real))
    return resolved
