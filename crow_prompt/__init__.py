"""crow_prompt: see README."""
