"""Our servers' listening sockets: bound by the launcher, made so every answer leaves at once.

Made as IPPROTO_TCP, so accepted connections get TCP_NODELAY under plain asyncio too, not
only under uvloop (which sets it itself): without it an answer written in two parts waits
~40 ms for the client's delayed ACK (measured on agno's launcher). Bound before the server
starts, so a taken port is the launcher's one line rather than the server's trace. One
module for the three launchers, which run in three environments: the standard library only.
"""

from __future__ import annotations

import socket

# Connections the kernel queues before the server accepts them: a burst's worth at 36/s.
BACKLOG = 2048


class CannotListen(ValueError):
    """The address cannot be bound; the message names it and why, the launcher adds its fix."""


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket on ``host``:``port``, or CannotListen."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CannotListen(f"cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(BACKLOG)
    return sock
