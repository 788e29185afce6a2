"""Rules: the presets and options the engine plays, and this server's limits."""
