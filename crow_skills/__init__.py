"""crow_skills: see README."""
