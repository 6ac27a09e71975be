"""The function tool the kit's own agno and LangGraph agents are given: ``lookup``.

Both platforms are configured by the kit (platforms/agno/app.py, platforms/langgraph/
graph.py), each in its own environment, so each defines the function its own way
(an agno function tool, a LangChain tool in a tool node); what the kit's marker
asks of it is one record: its name, and arguments that make it wait the stated
``tool_ms``.
"""

from __future__ import annotations

from engine.agent_plan import AgentTool

LOOKUP_TOOL = AgentTool(
    "lookup", lambda tool_ms: {"topic": "loadkit", "wait_ms": tool_ms}, waits=True
)
