"""Benchmark: the transport's CPU per read, by Content-Encoding, and what decoding adds.

A raw-socket server in a process of its own answers every request on one keep-alive
connection with the same list page (a JSON list of ``--items`` agents, as a platform
answers ``GET /agents``), sent as is (identity) or encoded gzip, deflate or br, whatever
the request asked. This process sends ``--requests`` reads per encoding through the
kit's transport (``engine.http.HttpTransport.send``, one greenlet, so nothing but the
exchange is measured) and prints this process's CPU seconds per read, the share of it
that decoding added (the encoding's figure minus identity's), and the decoding alone
(the same body decoded by the same decoder with no socket), each the median of
``--rounds`` rounds taken in turn, so a machine's drift moves every encoding alike.

    python bench/decoding.py [--requests 20000] [--rounds 5] [--items 20] [--json]

CPU time, not wall time: the figures are this process's own work, whatever else the
machine does; compare them as ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import brotli
import gevent  # noqa: F401  (the transport's sockets are gevent's, as in a load process)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.http import HttpCall, HttpTransport

ENCODINGS = ("identity", "gzip", "deflate", "br")
# The bound the scenario's default states (8 MiB): far above any page here.
MAX_BODY = 8 << 20


def page(items: int) -> bytes:
    """A list page as a platform answers it: ``items`` agents and the total."""
    agents = [
        {
            "id": f"00000000-0000-0000-0000-{n:012d}",
            "name": f"agent {n}",
            "status": "published",
            "description": "answers questions about the seeded documents " * 2,
            "created_at": "2026-12-01T00:00:00Z",
        }
        for n in range(items)
    ]
    return json.dumps({"items": agents, "total": items}).encode()


def encoded(body: bytes, encoding: str) -> bytes:
    """``body`` as a server sends it under ``encoding`` (compression levels as nginx's and
    uvicorn's GZip middleware default to: 6 for gzip and deflate, 4 for br)."""
    if encoding == "gzip":
        return gzip.compress(body, 6)
    if encoding == "deflate":
        return zlib.compress(body, 6)
    if encoding == "br":
        return brotli.compress(body, quality=4)
    return body


def serve(items: int) -> None:
    """Answer each request with the page in the encoding its Accept-Encoding names first;
    print the port once listening."""
    body = page(items)
    answers = {}
    for encoding in ENCODINGS:
        data = encoded(body, encoding)
        coding = b"" if encoding == "identity" else b"Content-Encoding: %s\r\n" % encoding.encode()
        answers[encoding.encode()] = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s"
            % (coding, len(data), data)
        )

    class Answering(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport, self.buf = transport, b""

        def data_received(self, data):
            self.buf += data
            while (end := self.buf.find(b"\r\n\r\n")) >= 0:
                head, self.buf = self.buf[:end].lower(), self.buf[end + 4 :]
                start = head.find(b"\r\naccept-encoding:")
                asked = b"identity"
                if start >= 0:
                    line_end = head.find(b"\r\n", start + 2)
                    value = head[start + 18 : None if line_end < 0 else line_end]
                    asked = value.split(b",")[0].strip() or b"identity"
                self.transport.write(answers.get(asked, answers[b"identity"]))

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Answering, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())


def cpu_per_read(url: str, encoding: str, requests: int) -> tuple[float, int]:
    """Microseconds of this process's CPU per read, and the decoded body's size."""
    http = HttpTransport(url, max_body=MAX_BODY, accept_encoding=encoding)
    call = HttpCall("GET", "/api/v1/agents", b"", {"Accept": "application/json"})
    size = len(http.send(call).body)
    begun = time.process_time()
    for _ in range(requests):
        answer = http.send(call)
    spent = time.process_time() - begun
    assert answer.status == 200 and len(answer.body) == size, (answer.status, len(answer.body))
    http.close()
    return spent / requests * 1e6, size


def decode_alone(body: bytes, encoding: str, times: int) -> float:
    """Microseconds to decode the encoded page once, with the library alone."""
    data = encoded(body, encoding)
    decode = {
        "gzip": lambda: zlib.decompressobj(31).decompress(data, MAX_BODY),
        "deflate": lambda: zlib.decompressobj(15).decompress(data, MAX_BODY),
        "br": lambda: brotli.Decompressor().process(data),
    }[encoding]
    begun = time.process_time()
    for _ in range(times):
        decode()
    return (time.process_time() - begun) / times * 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20000, help="reads per round (20000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, taken in turn (5)")
    parser.add_argument("--items", type=int, default=20, help="agents on the page (20)")
    parser.add_argument("--encodings", default=",".join(ENCODINGS), help="which to measure")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of a table")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve)
        return 0
    encodings = args.encodings.split(",")
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(args.items)], stdout=subprocess.PIPE, text=True
    )
    try:
        url = f"http://127.0.0.1:{int(_first_line(server))}"
        rounds: dict[str, list[float]] = {e: [] for e in encodings}
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            for encoding in encodings:
                us, sizes[encoding] = cpu_per_read(url, encoding, args.requests)
                rounds[encoding].append(us)
    finally:
        server.terminate()
        server.wait()
    body = page(args.items)
    figures: dict[str, dict[str, Any]] = {}
    for encoding in encodings:
        median = statistics.median(rounds[encoding])
        figures[encoding] = {
            "cpu_us_per_read": round(median, 2),
            "rounds": [round(us, 2) for us in rounds[encoding]],
            "wire_bytes": len(encoded(body, encoding)),
            "body_bytes": sizes[encoding],
        }
        if encoding != "identity":
            figures[encoding]["decode_alone_us"] = round(decode_alone(body, encoding, 2000), 2)
            if "identity" in figures:
                base = figures["identity"]["cpu_us_per_read"]
                figures[encoding]["added_us"] = round(median - base, 2)
    if args.json:
        print(json.dumps(figures))
        return 0
    print(
        f"{args.requests} reads x {args.rounds} rounds, page of {len(body)} bytes; "
        "CPU of this process"
    )
    print(f"{'encoding':<9} {'wire B':>7} {'us/read':>8} {'added':>7} {'decode alone':>13}  rounds")
    for encoding, f in figures.items():
        added = f"{f['added_us']:+.1f}" if "added_us" in f else ""
        alone = f"{f['decode_alone_us']:.1f}" if "decode_alone_us" in f else ""
        print(
            f"{encoding:<9} {f['wire_bytes']:>7} {f['cpu_us_per_read']:>8.1f} {added:>7} "
            f"{alone:>13}  {' '.join(f'{r:.1f}' for r in f['rounds'])}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def _first_line(process: subprocess.Popen) -> str:
    """The first line a child wrote to its piped stdout."""
    if process.stdout is None:
        raise RuntimeError("the server's stdout is not piped")
    return process.stdout.readline()
