"""agno's AgentOS: its dialect, setup client, seed, preflight and contract notes (CONTRACT.md)."""
