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


@lru_cache(maxsize=4096)
def ip_host_address(address: str) -> str | None:
    """`java_host_address` of an IP address (with an optional IPv6 `%scope`), None for text that is not one: a
    client's address always is one, so where a caller states it (serve's API, the shell) anything else is refused."""
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
