"""A veth pair with one end in a network namespace of its own: what the microbenchmarks put
a switch port on (the root-namespace end) and a traffic process in (the namespace end).

    with VethPair("innet-bv1", outer="ibvo1", inner="ibvi1", mtu=1500) as pair:
        ...   # innet-switch -i 1@pair.outer; ip netns exec pair.ns <sender> pair.inner

IPv6 is off on both ends (no router solicitations in the measured traffic). Names may be fixed
(a crashed run's pair of the same names is removed first) or per process. ``close`` removes
the namespace, which takes the pair with it; it is called on any error in ``__enter__``.
"""

from __future__ import annotations

import subprocess


class VethError(RuntimeError):
    """An ``ip`` command failed; names the command and what ip said."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``ip ARGS``; VethError naming it when it fails and ``check``."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise VethError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done


class VethPair:
    """``inner`` in namespace ``ns``, its peer ``outer`` in the root namespace (module docstring).
    ``tx_checksum``: False turns the ends' transmit checksum offload off (AF_PACKET senders
    whose frames must leave as written)."""

    def __init__(self, ns: str, outer: str, inner: str, mtu: int = 1500, tx_checksum: bool = True) -> None:
        self.ns, self.outer, self.inner, self.mtu = ns, outer, inner, mtu
        self.tx_checksum = tx_checksum
        self._made = False

    def __enter__(self) -> "VethPair":
        self.close(leftover=True)
        try:
            ip("netns", "add", self.ns)
            self._made = True
            ip("link", "add", self.outer, "mtu", str(self.mtu), "type", "veth", "peer", "name", self.inner,
               "mtu", str(self.mtu), "netns", self.ns)
            in_ns = ["ip", "netns", "exec", self.ns]
            for sysctl in ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"):
                subprocess.run([*in_ns, "sysctl", "-qw", sysctl], capture_output=True, timeout=30)
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{self.outer}.disable_ipv6=1"],
                           capture_output=True, timeout=30)
            ip("link", "set", self.outer, "up")
            ip("-n", self.ns, "link", "set", self.inner, "up")
            ip("-n", self.ns, "link", "set", "lo", "up")
            if not self.tx_checksum:
                subprocess.run(["ethtool", "-K", self.outer, "tx", "off"], capture_output=True, timeout=30)
                subprocess.run([*in_ns, "ethtool", "-K", self.inner, "tx", "off"], capture_output=True, timeout=30)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_mtu(self, mtu: int) -> None:
        """Both ends to ``mtu`` (a workload with jumbo frames)."""
        if mtu != self.mtu:
            ip("link", "set", self.outer, "mtu", str(mtu))
            ip("-n", self.ns, "link", "set", self.inner, "mtu", str(mtu))
            self.mtu = mtu

    def close(self, leftover: bool = False) -> None:
        """Remove the namespace (the pair goes with it) and ``outer`` should it remain;
        ``leftover``: also when this object did not make them (a crashed run's)."""
        if self._made or leftover:
            ip("netns", "del", self.ns, check=False)
            self._made = False
        ip("link", "del", self.outer, check=False)
