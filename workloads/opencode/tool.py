"""The built-in tool the kit's marker asks opencode's agent to call: ``read``.

opencode gives its agent its built-in tools (bash, edit, read, grep, ...); a user's
agent reads files all the time, and ``read`` of one of the seed's documents needs
no network, changes nothing and returns at once. It cannot wait a stated time, so
``tool_ms`` is refused on this platform. The path is relative to the project
folder opencode serves, which the seed wrote the corpus into. Put here by issue
28's owner so the shipped scenario (agent runs of three calls) runs on opencode;
opencode's own row of the depth sweep (issue 29's owner) may choose another.
"""

from __future__ import annotations

from engine.agent_plan import AgentTool
from workloads.corpus import document_name
from workloads.opencode.seed import CORPUS

AGENT_TOOL = AgentTool(
    "read", lambda _tool_ms: {"filePath": f"{CORPUS}/{document_name(0)}"}, waits=False
)
