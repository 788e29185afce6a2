"""Play: apply moves to a position and report every step (a rules service for apps)."""
