"""AG-UI (the Agent-User Interaction protocol): any agent server that speaks it, by URL and path."""
