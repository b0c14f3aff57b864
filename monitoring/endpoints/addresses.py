"""Which addresses the endpoint client may connect to, checked where aiohttp resolves them
and again on every connection.

Endpoint URLs are typed by managers, so the worker must not become their way into the
network behind it (lib/outbound.py says the same for webhooks). Every address a host
resolves to is checked, and the connection goes to those very addresses: aiohttp asks
this resolver, and gets back only what passed, so no second lookup can answer otherwise
(DNS rebinding), while Host and TLS's SNI keep the URL's name.

- link-local and cloud metadata addresses are refused always: they hand out the
  machine's own credentials, and no deployment needs Goldset to query them;
- other non-global addresses (loopback, private, shared, reserved) only when they fall
  in `allowed_networks`, the caller's setting (RETRIEVAL_ALLOWED_NETWORKS);
- unlike webhooks, the refusal is told plainly: the manager is the one to fix it.
"""

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from lib import outbound


class AddressRefused(OSError):
    """A host Goldset does not query; the message says why and what would allow it. An
    OSError so that aiohttp passes it through as the cause of its connector error."""


def networks_of(allowed_networks: Sequence[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(network, strict=False) for network in allowed_networks]


def refusal(shown: str, address: str, networks) -> str | None:
    """Why `address` (that `shown`, a URL or host, resolves to) is not queried, or None."""
    parsed = ipaddress.ip_address(address.split("%")[0])
    kind = outbound.address_kind(parsed)
    where = f"{shown} resolves to {parsed}," if shown != address else f"{parsed} is"
    if kind == "metadata":
        return f"{where} a link-local/metadata address Goldset never queries"
    if kind == "internal" and not any(parsed in network for network in networks):
        return f"{where} an internal address; allow its network in RETRIEVAL_ALLOWED_NETWORKS"
    return None


def checked_socket_factory(allowed_networks: Sequence[str] = ()):
    """A socket factory for aiohttp's connector that checks the very address each
    connection is about to open: the last word, after the resolver's, since aiohttp does
    not ask the resolver for an IP literal (a URL rendered as http://127.0.0.1/ would
    otherwise go where no check looked)."""
    networks = networks_of(allowed_networks)

    def open_checked(addr_info) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        reason = refusal(sockaddr[0], sockaddr[0], networks)
        if reason:
            raise AddressRefused(reason)
        return socket.socket(family=family, type=type_, proto=proto)

    return open_checked


class CheckedResolver(AbstractResolver):
    """aiohttp's threaded resolver, with every answer checked: AddressRefused when any
    address of the host is refused (a name with one public and one internal address is
    refused whole, not trimmed, since the internal one shows what the name is for)."""

    def __init__(self, allowed_networks: Sequence[str] = ()):
        self._networks = networks_of(allowed_networks)
        self._inner = aiohttp.ThreadedResolver()

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        name = host.rstrip(".").lower()
        if name in outbound.METADATA_HOSTS:
            raise AddressRefused(f"{host} is a cloud metadata service, which Goldset never queries")
        results = await self._inner.resolve(host, port, family)
        for result in results:
            reason = refusal(host, result["host"], self._networks)
            if reason:
                raise AddressRefused(reason)
        return results

    async def close(self) -> None:
        await self._inner.close()


async def check_url(url: str, allowed_networks: Sequence[str] = ()) -> str | None:
    """Why `url`'s host is refused, or None when it may be queried (or does not resolve
    now: DNS may be down for a moment, and each request's own attempts will tell).

    Run before a fetch sends anything, for one clear message instead of one per query,
    and because aiohttp skips the resolver for an IP literal: this checks those too.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    if host in outbound.METADATA_HOSTS:
        return f"{url} names {host}, a cloud metadata service Goldset never queries"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return None
    networks = networks_of(allowed_networks)
    for info in infos:
        reason = refusal(url, info[4][0], networks)
        if reason:
            return reason
    return None


def refused_cause(exc: BaseException) -> AddressRefused | None:
    """The AddressRefused behind an aiohttp error, if that is what it is."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, AddressRefused):
            return exc
        exc = getattr(exc, "os_error", None) or exc.__cause__
        seen += 1
    return None
