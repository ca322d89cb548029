"""The words that make plan mode refuse a tool, wherever they stand in its name or title.

A name is split into words on `_`, `-`, `.`, `/`, spaces and camelCase ("showAndRunShell" is show,
and, run, shell); each word is also tried without an -s, -es, -ed or -ing ending. One denial word
anywhere refuses the tool, whatever harmless word comes first and whatever its hints claim.
docs/default-agent.md lists them under "Plan mode's denial words": change both together.
"""

from __future__ import annotations

import re

DENIAL_WORDS = frozenset(
    # execute
    "exec execute run shell bash sh zsh ssh cmd command eval spawn invoke terminal subprocess popen "
    "start launch apply "
    # write
    "write edit create update upsert insert set put patch replace modify change save append add upload "
    "import mkdir touch chmod chown copy cp link ln sync "
    # delete
    "delete del remove rm rmdir unlink erase destroy purge clear wipe reset revert prune clean "
    # move
    "move mv rename "
    # send
    "send post email mail sms notify reply tweet submit invite share "
    # push
    "push publish deploy commit merge rebase install uninstall upgrade download approve "
    # kill
    "kill terminate stop shutdown restart reboot halt abort cancel disable enable "
    # drop
    "drop truncate alter grant revoke pay transfer".split()
)

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(name: str) -> list[str]:
    """The lower-case words of a tool name or title."""
    return [word.lower() for word in _WORD.findall(name)]


def _forms(word: str) -> set[str]:
    """The word and what it is without an inflection ending: runs, pushes, deleted, running."""
    forms = {word}
    for ending in ("s", "es", "ed", "d", "ing"):
        if word.endswith(ending) and len(word) > len(ending) + 1:
            stem = word[: -len(ending)]
            forms |= {stem, stem + "e"}
            if len(stem) > 2 and stem[-1] == stem[-2]:  # running, dropped
                forms.add(stem[:-1])
    return forms


def denial_word(*names: str) -> str | None:
    """The first denial word in any of the names, or None."""
    for name in names:
        for word in words(name):
            if found := _forms(word) & DENIAL_WORDS:
                return min(found)
    return None
