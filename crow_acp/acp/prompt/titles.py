"""Session titles written by the model: one short side call after the first turn.

The truncated first prompt is the title at once (session.take_title); this replaces it in the
background when the call succeeds, so the turn's response never waits for it. Anything odd in
the reply (empty, long, several lines, quotes) falls back to the prompt's title.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import anyio

from ...errors import CrowError
from ...events import TitleChanged
from ...util.secrets import redact

if TYPE_CHECKING:
    from ...config import TitleConfig
    from ...core.session import Session
    from ...model.profiles import Models

log = logging.getLogger(__name__)

TITLE_PROMPT = (
    "Name this conversation for a list of chats: three to six words, no quotes, no final period. "
    "Reply with the title only."
)
MAX_TITLE = 60
MAX_PROMPT = 2000
TIMEOUT = 30.0
_EDGES = re.compile(r"^[\s\"'`*#_:.-]+|[\s\"'`*#_:.]+$")


def clean_title(reply: str) -> str | None:
    """The title in a model's reply, or None when there is no usable one."""
    line = next((line for line in reply.splitlines() if line.strip()), "")
    line = re.sub(r"^(title|name)\s*:\s*", "", line.strip(), flags=re.I)
    title = " ".join(_EDGES.sub("", line).split())
    if not title or not title.isprintable():
        return None
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1].rsplit(" ", 1)[0] + "…"


async def name_session(session: Session, prompt: str, models: Models, config: TitleConfig) -> None:
    """Ask the model for a title and set it; on any failure the prompt's title stays."""
    client = models.client(config.model) if config.model else session.model
    fallback = session.title
    messages = [{"role": "system", "content": TITLE_PROMPT}, {"role": "user", "content": prompt[:MAX_PROMPT]}]
    reply = ""
    try:
        with anyio.move_on_after(TIMEOUT):
            reply = await client.complete(messages)
    except CrowError as exc:  # the model failed: the prompt's title is good enough
        log.info("no title from the model: %s", exc)
        return
    title = clean_title(redact(reply))  # before the cut to MAX_TITLE, which could leave part of a key
    if title is None or session.title != fallback:  # nothing usable, or the title changed meanwhile
        return
    session.title = title
    session.store.update(session.id, title=title)
    await session.emit(TitleChanged(session.id, title))
