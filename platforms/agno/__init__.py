"""agno's AgentOS, assembled on the stub, so the kit has a second real platform to run against.

This package runs in its own virtual environment (``.venv-agno``, from
``requirements-agno.txt``): agno pins its own FastAPI, pydantic and SQLAlchemy,
and the kit's environment must not move with them. Nothing in the kit imports
it; the kit talks to it over HTTP like any other deployment.
"""
