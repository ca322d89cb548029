"""A foreign member's permission options as the user sees them: a name that says what its kind does.

The editor acts on an option's kind (an `allow_always` is remembered as such) while the user reads
its name, so a member could offer "Deny" of kind `allow_always`. An option keeps its own name only
when the name agrees with its kind: no word of the opposite answer (a "deny" in an allow, an "allow"
in a reject) and, for the `_always` kinds, a word that says it lasts. Otherwise it is shown under
crow's own name for that kind; its id and kind are the member's, so its answer reaches it unchanged.
"""

from __future__ import annotations

import re

from acp.schema import PermissionOption

NAMES = {
    "allow_once": "Allow",
    "allow_always": "Always allow",
    "reject_once": "Reject",
    "reject_always": "Always reject",
}
ALLOWING = frozenset(
    {"allow", "allowed", "yes", "accept", "approve", "permit", "run", "ok", "okay", "proceed", "continue"}
)
REFUSING = frozenset(
    {
        "deny",
        "denied",
        "reject",
        "no",
        "don't",
        "dont",
        "not",
        "never",
        "refuse",
        "decline",
        "block",
        "cancel",
        "stop",
        "skip",
    }
)
LASTING = frozenset({"always", "never", "remember", "forever", "session", "all"})


def agrees(option: PermissionOption) -> bool:
    """The name says allow or refuse (not both, not neither) as the kind does, and lasting as `_always` does."""
    words = set(re.findall(r"[a-z']+", option.name.lower()))
    says_allow, says_refuse = bool(words & ALLOWING), bool(words & REFUSING)
    if says_allow == says_refuse or says_allow != option.kind.startswith("allow"):
        return False
    return bool(words & LASTING) == option.kind.endswith("_always")


def shown_options(options: list[PermissionOption]) -> list[PermissionOption]:
    """The options with a name that agrees with each kind: the member's, or crow's for that kind."""
    return [o if agrees(o) else o.model_copy(update={"name": NAMES.get(o.kind, o.name)}) for o in options]
