"""Which network addresses a fetch may reach: public ones only, unless the operator allows the
others (loopback, private, link-local, shared, multicast, reserved, documentation…).

The check is made on the addresses a name resolves to, by the resolver the HTTP client connects
with (:class:`bot.tools.http.GuardedResolver`), so the address checked is the address used: a
name that resolves to a public address when checked and to 127.0.0.1 a moment later (DNS
rebinding) is never looked up twice. An address written in the URL itself is checked by
:meth:`Reach.check_host`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from bot.tools.base import ToolError

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _inner(address: IpAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64, Teredo), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    inner = address.ipv4_mapped or address.sixtofour
    if inner is None and address in _NAT64:
        inner = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if inner is None and address.teredo is not None:
        inner = address.teredo[1]
    return inner


def is_public(address: IpAddress) -> bool:
    """Whether ``address`` is a public unicast address, also when it carries an IPv4 address
    inside an IPv6 one."""
    inner = _inner(address)
    if inner is not None and not is_public(inner):
        return False
    return address.is_global and not address.is_multicast


def describe(address: IpAddress) -> str:
    """What kind of address it is, in words (for a refusal)."""
    inner = _inner(address)
    if inner is not None and not is_public(inner):
        return f"{describe(inner)} inside an IPv6 one"
    for kind, flag in (
        ("a loopback", address.is_loopback),
        ("a link-local", address.is_link_local),
        ("a private", address.is_private),
        ("a multicast", address.is_multicast),
        ("an unspecified", address.is_unspecified),
        ("a reserved", address.is_reserved),
    ):
        if flag:
            return f"{kind} address"
    return "not a public address"


def refusal(host: str, address: IpAddress) -> ToolError:
    what = (
        f"{address} ({describe(address)})"
        if host.strip("[]") != str(address)
        else describe(address)
    )
    return ToolError(
        f"refused: {host} is {what}; fetch_url only reaches public "
        "addresses (an operator can allow others with [tools.fetch_url] allow_private or "
        "allow_networks)"
    )


class Reach:
    """The addresses that may be reached: public ones, those in ``networks``, and, with
    ``private``, every other one."""

    def __init__(
        self,
        private: bool = False,
        networks: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network] = (),
    ) -> None:
        self.private = private
        self.networks = tuple(networks)

    def permits(self, address: IpAddress) -> bool:
        return self.private or is_public(address) or any(address in n for n in self.networks)

    def check_host(self, host: str) -> None:
        """Refuse ``host`` when it is an IP address that may not be reached (names are
        checked when they are resolved)."""
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return
        if not self.permits(address):
            raise refusal(host, address)
