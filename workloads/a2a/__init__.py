"""A2A (Agent2Agent): any agent server that speaks it, reached from its agent card alone."""
