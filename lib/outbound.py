"""HTTP requests to addresses that users typed (alert webhooks), safe from server-side forgery.

A manager can point a webhook anywhere; without a check the worker would POST to Redis on
127.0.0.1:6379, a cloud metadata service on 169.254.169.254 or any host of the internal
network, and its error messages would tell open ports from closed ones. So, at send time:

- the host is resolved once and every address it resolves to is checked: loopback,
  link-local (which holds the cloud metadata services), private, shared, multicast,
  reserved and unspecified addresses are refused, as are the metadata host names, unless
  an address falls in `allowed_networks` (a setting, for receivers inside the network);
  link-local and metadata addresses are refused whatever that setting says;
- the connection goes to the very address that was checked (no second lookup that a DNS
  rebinding could answer differently), with the URL's host name in Host and in TLS's SNI
  and certificate check;
- redirects are not followed, and every failure to reach the receiver, refused address
  included, is told with one text (`UNREACHABLE`), so the error shows nothing of the
  network behind the worker.
"""

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

UNREACHABLE = "the receiver could not be reached (no answer, or an address Goldset does not send to)"
# Host names of cloud metadata services that need no lookup to be known for what they are.
METADATA_HOSTS = {"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
# Metadata addresses outside the link-local range (Alibaba Cloud; AWS over IPv6).
METADATA_ADDRESSES = {ipaddress.ip_address("100.100.100.200"), ipaddress.ip_address("fd00:ec2::254")}


def secret_hosts_setting(variable: str) -> str:
    """The environment variable that names the hosts `variable`'s secret may be sent to."""
    return f"{variable}_HOSTS"


def secret_host_problem(variable: str, host: str, environ: Mapping[str, str]) -> str | None:
    """Why the secret in `variable` may not be sent to `host`, or None when it may.

    A secret goes only where the operator said it may: `<VARIABLE>_HOSTS`, a comma-separated
    list of host names (`search.internal`), of `.example.com` for a domain and its
    subdomains, or of networks (`10.2.0.0/16`) for a host written as an address. Without
    it the secret is sent nowhere: a manager types URLs, the operator holds the secrets.
    """
    setting = secret_hosts_setting(variable)
    allowed = [entry.strip().lower() for entry in environ.get(setting, "").split(",") if entry.strip()]
    if not allowed:
        return f"${{{variable}}} is sent only to the hosts in {setting}, which is not set in the worker's environment"
    host = host.rstrip(".").lower().strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in allowed:
        if entry == host or (entry.startswith(".") and (host.endswith(entry) or host == entry[1:])):
            return None
        if address is not None and "/" in entry:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return None
            except ValueError:
                continue
    return f"${{{variable}}} may be sent only to the hosts in {setting} ({', '.join(allowed)}), and {host} is not one of them"


def scrub(text: str, secrets: Mapping[str, str]) -> str:
    """`text` with every secret value in `secrets` ({variable: value}) written as `${variable}`:
    for errors and answers that are stored or shown (an endpoint may echo its headers)."""
    for variable, value in secrets.items():
        if value and len(value) >= 4 and value in text:
            text = text.replace(value, f"${{{variable}}}")
    return text


class OutboundRefused(Exception):
    """The URL is not one Goldset sends to (sending again cannot help); `detail` says why,
    for the logs only: the user is told UNREACHABLE, as for any other failure."""

    def __init__(self, detail: str):
        super().__init__(UNREACHABLE)
        self.detail = detail


@dataclass(frozen=True)
class OutboundResponse:
    status: int
    reason: str


def url_problem(url: str, *, what: str = "a webhook URL") -> str | None:
    """Why `url` cannot be sent to at all (checked when it is saved), or None; `what` names
    the kind of URL in the message ("a webhook URL", "an endpoint URL")."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"{url!r} is not an http:// or https:// URL"
    if not parts.hostname:
        return f"{url!r} names no host"
    if parts.username or parts.password:
        return f"{what} may not carry a user name or password; use a token in its path or query"
    try:
        parts.port  # noqa: B018  (reading it raises ValueError for a port that is not a number)
    except ValueError:
        return f"{url!r} has a port that is not a number from 0 to 65535"
    return None


# IPv6 prefixes whose last 32 bits are an IPv4 address a gateway forwards to: NAT64's
# well-known and local-use prefixes, and the deprecated IPv4-compatible form (::a.b.c.d).
_IPV4_EMBEDDING = (
    ipaddress.ip_network("64:ff9b::/96"),
    ipaddress.ip_network("64:ff9b:1::/48"),
    ipaddress.ip_network("::/96"),
)


def _spellings(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """`address` and every IPv4 address it carries: an IPv6 address may spell an IPv4 one
    (mapped ::ffff:a.b.c.d, 6to4 2002:a.b.c.d::, Teredo, NAT64 64:ff9b::a.b.c.d, compatible
    ::a.b.c.d), and a gateway on the way would deliver it there: 64:ff9b::a9fe:a9fe is the
    metadata address to a NAT64 gateway."""
    if not isinstance(address, ipaddress.IPv6Address):
        return [address]
    carried = [address.ipv4_mapped, address.sixtofour, address.teredo[1] if address.teredo else None]
    if any(address in network for network in _IPV4_EMBEDDING) and int(address) > 1:
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [address, *(embedded for embedded in carried if embedded is not None)]


def _is_refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Anything but a public unicast address, in any spelling: loopback, link-local (the
    metadata services), private, shared (100.64/10), reserved, unspecified and multicast
    addresses all fail."""
    return any(one in METADATA_ADDRESSES or not one.is_global or one.is_multicast for one in _spellings(address))


def address_kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """ "metadata" for link-local and cloud metadata addresses in any spelling, which no
    allow-list may open (they answer with the machine's own credentials), "internal" for
    any other address `_is_refused` refuses (loopback, private, shared, reserved...),
    "global" otherwise."""
    if any(one in METADATA_ADDRESSES or one.is_link_local for one in _spellings(address)):
        return "metadata"
    return "internal" if _is_refused(address) else "global"


def checked_address(url: str, allowed_networks: Sequence[str] = ()) -> tuple[str, int, str]:
    """(host, port, address to connect to) for `url`; OutboundRefused for a URL or address
    not sent to, ConnectionError(UNREACHABLE) for a host that does not resolve.

    Every address the host resolves to must pass (a name that resolves to one public and
    one internal address is refused): connecting to the first one alone would let a DNS
    answer with several addresses slip the internal one in on a retry.
    """
    problem = url_problem(url)
    if problem:
        raise OutboundRefused(problem)
    parts = urlsplit(url)
    host = parts.hostname.rstrip(".").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if host in METADATA_HOSTS:
        raise OutboundRefused(f"{host} is a cloud metadata service")
    networks = [ipaddress.ip_network(network, strict=False) for network in allowed_networks]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:  # may pass (DNS down): not a refusal
        raise ConnectionError(UNREACHABLE) from exc
    addresses = sorted({info[4][0].split("%")[0] for info in infos})
    for text in addresses:
        address = ipaddress.ip_address(text)
        # No allowed network opens a link-local or metadata address: they answer with the
        # machine's own credentials, and a range written for a local model server (say
        # 169.254.0.0/16 on a host whose model listens there) must not reach them.
        if address_kind(address) == "metadata":
            raise OutboundRefused(f"{host} resolves to {address}, a link-local/metadata address no setting allows")
        if _is_refused(address) and not any(address in network for network in networks):
            raise OutboundRefused(f"{host} resolves to {address}, an internal address (allow it in ALERT_WEBHOOK_ALLOWED_NETWORKS)")
    return host, port, addresses[0]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a checked address, with the URL's host name for SNI and the certificate."""

    def __init__(self, address: str, port: int, server_hostname: str, **kwargs):
        super().__init__(address, port, context=ssl.create_default_context(), **kwargs)
        self._server_hostname = server_hostname

    def connect(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_hostname)


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float, allowed_networks: Sequence[str] = ()) -> OutboundResponse:
    """POST `body` to `url` through the checks above; the receiver's status and reason.

    Raises OutboundRefused for a URL not sent to, and ConnectionError(UNREACHABLE) for a
    receiver that does not answer (refused, reset, timed out, TLS failure alike).
    """
    host, port, address = checked_address(url, allowed_networks)
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    default_port = 443 if parts.scheme == "https" else 80
    if parts.scheme == "https":
        connection = _PinnedHTTPSConnection(address, port, host, timeout=timeout)
    else:
        connection = http.client.HTTPConnection(address, port, timeout=timeout)
    host_header = host if port == default_port else f"{host}:{port}"
    if ":" in host and not host.startswith("["):  # an IPv6 literal
        host_header = f"[{host}]" if port == default_port else f"[{host}]:{port}"
    try:
        connection.request("POST", path, body=body, headers={**headers, "Host": host_header, "Content-Length": str(len(body))})
        response = connection.getresponse()
        response.read(1024)
        return OutboundResponse(response.status, response.reason)
    except (OSError, http.client.HTTPException) as exc:
        raise ConnectionError(UNREACHABLE) from exc
    finally:
        connection.close()
