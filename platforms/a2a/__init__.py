"""An A2A (Agent2Agent) server on the reference SDK, a2a-sdk 1.3.0, with one agent on the stub.

The kit's own A2A server, so the A2A dialect has a server built the way the
protocol's reference SDK intends (an ``AgentExecutor`` behind its
``DefaultRequestHandler``, its routes, its ``TaskUpdater``) to run against. This
package runs in its own virtual environment (``.venv-a2a``, from
``requirements-a2a.txt``): a2a-sdk pins its own protobuf and Starlette, and the
kit's environment must not move with them. Nothing in the kit imports it; the
kit talks to it over HTTP like any other deployment.
"""
