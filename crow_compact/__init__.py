"""crow_compact: see README."""
