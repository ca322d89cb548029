"""crow_compact: compaction that keeps long sessions alive without losing what matters (see README).

    from crow_compact import default_compact
    compact = default_compact(threshold=100_000, keep_last=10)
    callbacks = CrowCallbacks(pre_request=[compact], post_response=[compact], end_session=[compact])

The callback also brings the `/compact [focus]` slash command, and honours
`session.trigger_compaction(focus)` from any other callback at its next check.
"""

from __future__ import annotations

from typing import Any

from .callback import Compaction, Outcome, default_compact


def compact_from_config(config: Any = None) -> Compaction:
    """default_compact() with [compaction] threshold and keep_last from crow's Config."""
    from crow_acp.config import CompactionConfig

    settings = config.compaction if config is not None else CompactionConfig()
    return default_compact(settings.threshold, settings.keep_last)


__all__ = ["Compaction", "Outcome", "compact_from_config", "default_compact"]
