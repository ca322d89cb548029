"""Multi-agent patterns and presets (bridges, chains, loops, supervisors)."""
