"""The one tool the kit gives an AgenticOS agent for the loop, as its users would.

AgenticOS binds tools through the agent spec's capabilities. ``code_execution``'s
``run_python`` needs no network, no file, no secret and no connection, and every
organisation is granted it; its argument is the program, so the kit decides what a
call costs (``1+1``, answered ``result: 2``). No built-in tool can wait a stated time
(its sandbox has neither ``time`` nor ``asyncio.sleep``), so ``tool_ms`` is refused
on this platform. Read from AgenticOS 0.0.247 and run on the lab
(/work/helpers/agenticos-tools.md); the reference platform offers the same tool.
"""

from __future__ import annotations

from engine.agent_plan import AgentTool

CODE_EXECUTION = "code_execution"
RUN_PYTHON = "run_python"
PROGRAM = "1+1"

AGENT_TOOL = AgentTool(RUN_PYTHON, lambda _tool_ms: {"code": PROGRAM}, waits=False)
