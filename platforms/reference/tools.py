"""The tools an agent's spec may give it, as AgenticOS gives them: by capability.

AgenticOS 0.0.247 binds tools through ``spec.capabilities``; the one a load test's
agent gets is ``code_execution``, whose tool ``run_python`` runs a small program in
a sandbox with no network and no files (/work/helpers/agenticos-tools.md, read
from its source and run on the lab). The model sees the same name, parameters and
strict flag; the description is in this platform's own words, so a request's
``tools`` is 594 bytes here against AgenticOS's 670.

The difference, stated: AgenticOS runs each call in a Monty worker process it
opens for that call (lab measured 1.3 ms CPU in the API process and 2.4 ms in the
child per call); this platform evaluates the program's arithmetic in-process,
so its overhead per step leaves the sandbox's cost out.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable

CODE_EXECUTION = "code_execution"
RUN_PYTHON = "run_python"
# The capabilities a spec may name here; AgenticOS has more, none of which a load test needs.
CAPABILITIES = (CODE_EXECUTION,)

# run_python as AgenticOS offers it to the model.
RUN_PYTHON_TOOL = {
    "type": "function",
    "function": {
        "name": RUN_PYTHON,
        "description": (
            "<summary>Run a small Python program to compute something.\n\nUse for arithmetic, "
            "counting, dates and small data transformations. Print what you want to read back."
            "</summary>\n<returns>\n<type>str</type>\n<description>What the program printed, "
            "and the value of its last expression.</description>\n</returns>"
        ),
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "code": {
                    "description": "The program. Print what you want to read back.",
                    "type": "string",
                }
            },
            "required": ["code"],
            "type": "object",
        },
        "strict": True,
    },
}

_OPERATORS: dict[type, Callable[..., object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
# Past this a program is not "something small" (AgenticOS's sandbox bounds memory and time).
MAX_CODE = 10_000


def tools_for(capabilities: list[str]) -> list[dict]:
    """The tools a request to the model offers for these capabilities."""
    return [RUN_PYTHON_TOOL] if CODE_EXECUTION in capabilities else []


def run_tool(name: str, arguments: str) -> str:
    """A tool call's result as the model reads it back; a failure is a result too, as it is
    on AgenticOS (the loop goes on)."""
    if name != RUN_PYTHON:
        return f"Unknown tool: {name}"
    try:
        code = json.loads(arguments).get("code")
    except (ValueError, AttributeError):
        return "Execution failed: the arguments are not a JSON object"
    if not isinstance(code, str) or len(code) > MAX_CODE:
        return "Execution failed: code must be a string of at most 10000 characters"
    return run_python(code)


def run_python(code: str) -> str:
    """``result: VALUE`` of the program's last expression (arithmetic on numbers), else the
    error AgenticOS's sandbox would name."""
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        return f"Execution failed: SyntaxError: {exc.msg}"
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return "result: None"
    try:
        return f"result: {_value(tree.body[-1].value)}"
    except NameError as exc:
        return f"Execution failed: NameError: {exc}"
    except (ArithmeticError, TypeError, ValueError) as exc:
        return f"Execution failed: {type(exc).__name__}: {exc}"


def _value(node: ast.expr) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.operand))
    if isinstance(node, ast.Name):
        raise NameError(f"name {node.id!r} is not defined")
    raise TypeError(f"{type(node).__name__} is not supported here")
