"""Client host text exactly as Java's `InetAddress.getHostAddress()` prints it (spec §17.1).

Pure functions; thread-safe.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache


def java_host_address(address: str) -> str:
    """IPv4 dotted decimal; IPv6 uncompressed lower-case hex without leading zeros (`::1` -> `0:0:0:0:0:0:0:1`).

    IPv4-mapped IPv6 becomes the IPv4 text and a `%scope` suffix is kept, as in Java. Text that is
    not an IP address is returned unchanged (it can only match an ACL host of the same text or `*`).
    """
    host = ip_host_address(address)
    return address if host is None else host


# The longest text of an IP address: IPv6 with an embedded IPv4 address (45 characters) and a `%scope` (an interface
# name, at most 15 characters on Linux, or a number).
MAX_ADDRESS_CHARS = 64


def ip_host_address(address: str) -> str | None:
    """`java_host_address` of an IP address (with an optional IPv6 `%scope`), None for text that is not one: a
    client's address always is one, so where a caller states it (serve's API, the shell) anything else is refused.

    Text longer than any address is refused before the cache: kept by it, 4096 distinct `client_address` values of
    32,767 characters (400s of a caller asking about itself, 4 s on loopback) held 530 MB of serve for good."""
    return None if len(address) > MAX_ADDRESS_CHARS else _ip_host_address(address)


@lru_cache(maxsize=4096)
def _ip_host_address(address: str) -> str | None:
    text, _, scope = address.partition("%")
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    words = ip.packed
    out = ":".join(format((words[i] << 8) | words[i + 1], "x") for i in range(0, 16, 2))
    return f"{out}%{scope}" if scope else out
