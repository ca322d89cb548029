"""Crow starts without the cyclic garbage collector, and freezes what start-up made once the agent is built.

Importing acp, openai, pydantic models and crow allocates hundreds of thousands of objects that live as
long as the process; the collector would traverse them again and again while they load (about a tenth
of start-up's CPU) and at every full collection after. Frozen, later collections skip them.
"""

from __future__ import annotations

import gc


def pause() -> None:
    gc.disable()


def resume() -> None:
    """After start-up: freeze what it made, collect as usual from now on. No collection first: it costs
    ~120 ms and would free a few hundred objects."""
    gc.freeze()
    gc.enable()
