"""Game analysis: every sowing of a game judged against perfect play."""
