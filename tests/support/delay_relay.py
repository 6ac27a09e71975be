"""A TCP relay that delays every byte by a fixed time each way: latency without ``tc netem``.

Where the kernel has no netem qdisc, tests/test_distributed_netns.py runs this in
its hub namespace so master and workers are still a real link apart: each chunk
read on one side is written to the other ``--delay-ms`` after it arrived (in
order, so delays never add up), for every ``LISTEN=TARGET`` pair given. It binds
only the addresses it is told, inside the test's namespaces, and says ``ready``
on stdout once every listener is open.

    python -m tests.support.delay_relay --delay-ms 25 10.241.0.254:5557=10.241.0.1:5557 ...
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

# Bytes read at once; a relay chunk is delayed as a whole.
CHUNK = 65536


async def _pump(reader, writer, delay_s: float) -> None:
    """Copy reader to writer, each chunk written ``delay_s`` after it was read."""
    queue: asyncio.Queue = asyncio.Queue()

    async def write() -> None:
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    writing = asyncio.create_task(write())
    try:
        while True:
            data = await reader.read(CHUNK)
            queue.put_nowait((time.monotonic() + delay_s, data))
            if not data:
                break
        await writing
    except (ConnectionError, OSError):
        writing.cancel()
        writer.close()


async def _serve(listen: str, target: str, delay_s: float) -> asyncio.Server:
    host, port = listen.rsplit(":", 1)
    to_host, to_port = target.rsplit(":", 1)

    async def relay(reader, writer) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(to_host, int(to_port))
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            _pump(reader, up_writer, delay_s),
            _pump(up_reader, writer, delay_s),
            return_exceptions=True,
        )

    return await asyncio.start_server(relay, host, int(port))


async def _main(pairs: list[str], delay_s: float) -> None:
    servers = [await _serve(*pair.split("=", 1), delay_s) for pair in pairs]
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main() -> int:
    """Relay until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("pairs", nargs="+", help="LISTEN_HOST:PORT=TARGET_HOST:PORT")
    args = parser.parse_args()
    asyncio.run(_main(args.pairs, args.delay_ms / 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
