"""Our servers' listening sockets give every accepted connection TCP_NODELAY, under any loop.

An answer written in two parts (head, then body) on a connection without
TCP_NODELAY waits for the client's delayed ACK, about 40 ms on Linux, whenever a
request follows the last answer closely: measured on agno's launcher, it made
agno's light requests look ~40 ms slow. uvloop sets the option itself; plain
asyncio only on sockets made as IPPROTO_TCP, which each launcher now does. The
check runs the launcher's own socket under plain asyncio and reads the option on
the server's side of a real connection.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from stack.agno import AGNO
from stack.langgraph import LANGGRAPH
from stack.processes import ROOT

pytestmark = pytest.mark.system

CHECK = textwrap.dedent(
    """
    import asyncio, socket, sys

    def nodelay_of_accepted(listening):
        async def main():
            accepted = asyncio.get_running_loop().create_future()

            async def on_connect(reader, writer):
                sock = writer.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                writer.close()

            server = await asyncio.start_server(on_connect, sock=listening)
            host, port = listening.getsockname()[:2]
            _, writer = await asyncio.open_connection(host, port)
            value = await asyncio.wait_for(accepted, 10)
            writer.close()
            server.close()
            return value

        asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
        return asyncio.run(main())

    LISTEN
    print(nodelay_of_accepted(sock))
    """
)

LISTENING = (
    "from platforms.listening import listening_socket\nsock = listening_socket('127.0.0.1', 0)"
)
STUB = (
    "from stub.serve import _reusable_socket\n"
    "sock = _reusable_socket(); sock.bind(('127.0.0.1', 0)); sock.listen()"
)
# What makes each server's socket, and the environment it runs in: the three launchers
# share platforms/listening.py, each in its own environment.
SERVERS = {
    "platforms.reference": (LISTENING, lambda: sys.executable),
    "platforms.agno": (LISTENING, AGNO.interpreter),
    "platforms.langgraph": (LISTENING, LANGGRAPH.interpreter),
    "stub": (STUB, lambda: sys.executable),
}


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_accepted_connections_get_tcp_nodelay_under_plain_asyncio(server):
    listen, python = SERVERS[server]
    script = CHECK.replace("LISTEN", listen)
    done = subprocess.run(
        [python(), "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "1", done.stdout
