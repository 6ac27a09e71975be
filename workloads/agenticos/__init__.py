"""AgenticOS: its dialect for the six workloads, and its setup (client, seed, preflight).

The wire contract is ``../shared/contract/agenticos-api.md``; CONTRACT.md here
notes what the kit relies on and where the reference platform differs.
"""
