"""LangGraph's Agent Server (``langgraph-api``, in-memory runtime) running our graph on the stub.

This package runs in its own virtual environment (``.venv-langgraph``, from
``requirements-langgraph.txt``): langgraph-api pins its own Starlette, pydantic
and OpenTelemetry, and the kit's environment must not move with them. Nothing in
the kit imports it; the kit talks to it over HTTP like any other deployment.
"""
