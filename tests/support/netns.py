"""Linux network namespaces made (and always removed) by a test: hosts without other hosts.

A hub namespace holds a bridge (with an address of its own, for a relay); each role
(master, worker0, ...) gets a namespace of its own, joined to the bridge by a veth
pair, with an address in 10.241.0.0/24 that exists only inside these namespaces.
``tc netem`` adds delay and loss to a role's link where the kernel has it. Nothing
is added to the namespace the test runs in, and every namespace is deleted when the
block ends (which removes its links too).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

# A /24 no other part of the suite uses; addresses exist only inside the test's namespaces.
SUBNET = "10.241.0"
# The hub's own address on the bridge, where a relay between the roles can listen.
HUB_ADDRESS = f"{SUBNET}.254"
# Each namespace name starts with this and the test process's PID, so parallel runs never
# collide and leftovers name their owner.
PREFIX = f"lk{os.getpid()}"
# Any ip/tc command is quick; one that hangs is a broken host, not a slow one.
COMMAND_TIMEOUT_S = 20


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)


def _must(*args: str) -> None:
    result = _ip(*args)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")


def unavailable() -> str | None:
    """Why this host cannot make namespaces for a test (None when it can)."""
    if shutil.which("ip") is None:
        return "the ip command is missing (Debian: apt-get install iproute2)"
    if os.geteuid() != 0:
        return "making network namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    probe = f"{PREFIX}-probe"
    made = _ip("netns", "add", probe)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    try:
        bridge = _ip("-n", probe, "link", "add", "br0", "type", "bridge")
        if bridge.returncode != 0:
            return f"no bridge links here: {bridge.stderr.strip()}"
    finally:
        _ip("netns", "del", probe)
    return None


def netem_unavailable() -> str | None:
    """Why ``tc netem`` cannot shape a link here (None when it can)."""
    if shutil.which("tc") is None:
        return "the tc command is missing (Debian: apt-get install iproute2)"
    probe = f"{PREFIX}-netem"
    _must("netns", "add", probe)
    try:
        _must("-n", probe, "link", "add", "name", "va", "type", "veth", "peer", "name", "vb")
        result = subprocess.run(
            ["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "va", "root", "netem"],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        if result.returncode != 0:
            return f"this kernel has no netem qdisc (tc: {result.stderr.strip()})"
    finally:
        _ip("netns", "del", probe)
    return None


@dataclass
class Topology:
    """The roles' namespaces and addresses; ``run_in(role)`` is the command prefix."""

    namespaces: dict[str, str]
    addresses: dict[str, str]

    def run_in(self, role: str) -> list[str]:
        """Put before a command to run it in ``role``'s namespace (exec: the PID is its own)."""
        return ["ip", "netns", "exec", self.namespaces[role]]

    def cut_off(self, role: str) -> None:
        """Take ``role``'s link down at the bridge: its packets go nowhere from now on."""
        _must("-n", self.namespaces["hub"], "link", "set", f"to-{role}", "down")


@contextlib.contextmanager
def topology(roles: list[str], netem: str = "") -> Iterator[Topology]:
    """Namespaces for ``roles`` on one bridge; ``netem`` (e.g. "delay 25ms loss 1%") shapes
    both directions of every role's link. All of it is deleted when the block ends."""
    hub = f"{PREFIX}-hub"
    namespaces = {"hub": hub, **{role: f"{PREFIX}-{role}" for role in roles}}
    addresses = {"hub": HUB_ADDRESS, **{role: f"{SUBNET}.{i + 1}" for i, role in enumerate(roles)}}
    made: list[str] = []
    try:
        for namespace in namespaces.values():
            _must("netns", "add", namespace)
            made.append(namespace)
            _must("-n", namespace, "link", "set", "lo", "up")
        _must("-n", hub, "link", "add", "br0", "type", "bridge")
        _must("-n", hub, "addr", "add", f"{HUB_ADDRESS}/24", "dev", "br0")
        _must("-n", hub, "link", "set", "br0", "up")
        for role in roles:
            ns, link = namespaces[role], f"to-{role}"
            peer = ("peer", "name", "eth0", "netns", ns)
            _must("-n", hub, "link", "add", link, "type", "veth", *peer)
            _must("-n", hub, "link", "set", link, "master", "br0", "up")
            _must("-n", ns, "addr", "add", f"{addresses[role]}/24", "dev", "eth0")
            _must("-n", ns, "link", "set", "eth0", "up")
            if netem:
                for where, dev in ((ns, "eth0"), (hub, link)):
                    command = ["tc", "qdisc", "add", "dev", dev, "root", "netem", *netem.split()]
                    subprocess.run(
                        ["ip", "netns", "exec", where, *command],
                        check=True,
                        capture_output=True,
                        timeout=COMMAND_TIMEOUT_S,
                    )
        yield Topology(namespaces, addresses)
    finally:
        for namespace in reversed(made):
            _ip("netns", "del", namespace)
