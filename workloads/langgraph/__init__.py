"""LangGraph's Agent Server: dialect, setup client, seed, preflight, follow-up, CONTRACT.md."""
