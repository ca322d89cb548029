"""crow: presets and multi-agent patterns assembled from crow_acp, crow_prompt, crow_skills and crow_compact."""

__version__ = "0.1.0"
