"""Kept for branches still importing it; the helpers live in stack/processes.py."""

from stack.processes import Server, free_port, running, stop, wait_ready

__all__ = ["Server", "free_port", "running", "stop", "wait_ready"]
