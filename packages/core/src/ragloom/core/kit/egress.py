"""Egress policy: which addresses a URL taken from untrusted text may reach.

A URL found in a document, a search result, a web page or a model's answer is chosen by
whoever wrote that text. Fetched blindly it reaches loopback services, the cloud metadata
endpoint (``169.254.169.254``) or the intranet (server-side request forgery). Every
ragloom component that fetches such a URL goes through one :class:`EgressPolicy`:

- only ``http`` and ``https``; a redirect may not change the scheme (except the upgrade
  ``http`` -> ``https``);
- the host is resolved once, and every address it resolves to must be public: loopback,
  private, link-local, unique-local, shared (CGNAT), reserved, multicast and unspecified
  addresses are refused, also when written as decimal (``2130706433``), short
  (``127.1``), IPv4-mapped (``::ffff:127.0.0.1``), 6to4, Teredo or NAT64 forms;
- :meth:`EgressPolicy.create_connection` connects to the address that was checked, so a
  second DNS answer (DNS rebinding) cannot switch it.

``allow_private_addresses=True`` turns the address rule off (intranet use);
``allowed_networks`` lets chosen networks through while refusing the rest. Nothing here
needs an HTTP library: :mod:`ragloom.core.kit.http` builds its bounded client on it.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, urlsplit

from ragloom.core.errors import EgressRefusedError, InvalidArgumentError

__all__ = [
    "ALLOW_ALL",
    "DEFAULT_EGRESS_POLICY",
    "EgressPolicy",
    "ResolvedAddress",
    "Resolver",
    "refusal_reason",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[tuple[Any, ...]]]
"""``getaddrinfo``-shaped: ``(host, port)`` -> ``[(family, type, proto, canonname, sockaddr)]``."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


@dataclass(frozen=True, slots=True)
class ResolvedAddress:
    """One checked address of a host: the socket family and the ``sockaddr`` to connect."""

    family: int
    sockaddr: tuple[Any, ...]

    @property
    def ip(self) -> IPAddress:
        """The address as an :mod:`ipaddress` object."""
        return ipaddress.ip_address(str(self.sockaddr[0]).split("%", 1)[0])


def _system_resolver(host: str, port: int) -> Sequence[tuple[Any, ...]]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, 6to4, Teredo, NAT64, compatible)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _NAT64_LOCAL or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public unicast address (``None`` when it is)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner = refusal_reason(embedded)
            return None if inner is None else f"{inner} (embedded in {ip})"
    for attribute in (
        "is_unspecified",
        "is_loopback",
        "is_link_local",
        "is_multicast",
        "is_private",
    ):
        if getattr(ip, attribute):
            return attribute[3:].replace("_", "-") + f" address {ip}"
    if not ip.is_global:
        return f"non-public address {ip}"
    return None


def _networks(values: Iterable[str]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError as exc:
            raise InvalidArgumentError(
                f"allowed_networks: {value!r} is not a network ({exc})"
            ) from exc
    return tuple(networks)


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Which URLs and addresses a fetch of an untrusted URL may reach.

    ``allow_private_addresses``: reach every address (trusted intranet use).
    ``allowed_networks``: CIDRs reached even though they are not public (e.g.
    ``("10.20.0.0/16",)`` for one intranet), everything else non-public stays refused.
    ``schemes``: the URL schemes accepted. ``resolver``: how host names are resolved
    (``socket.getaddrinfo`` by default; tests pass their own to map names to addresses).
    """

    allow_private_addresses: bool = False
    allowed_networks: tuple[str, ...] = ()
    schemes: frozenset[str] = frozenset({"http", "https"})
    resolver: Resolver = field(default=_system_resolver, repr=False, compare=False)
    _parsed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if isinstance(self.allowed_networks, str):
            raise InvalidArgumentError(
                f"allowed_networks must be a sequence of CIDRs, got {self.allowed_networks!r}"
            )
        object.__setattr__(self, "_parsed_networks", _networks(self.allowed_networks))

    def check_address(self, ip: IPAddress, *, url: str = "") -> None:
        """Raise :class:`EgressRefusedError` unless ``ip`` may be reached."""
        if self.allow_private_addresses or any(ip in net for net in self._parsed_networks):
            return
        reason = refusal_reason(ip)
        if reason is not None:
            where = f"{url}: " if url else ""
            raise EgressRefusedError(
                f"{where}refused by the egress policy: {reason} "
                "(pass allow_private_addresses=True or allowed_networks to reach it)"
            )

    def check_url(self, url: str) -> SplitResult:
        """The parsed ``url`` when its scheme is accepted and it names a host; else
        :class:`EgressRefusedError`. Addresses are checked at connection time."""
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 -- raises ValueError on a bad port
        except ValueError as exc:
            raise EgressRefusedError(f"{url!r}: not a valid URL ({exc})") from exc
        if parts.scheme.lower() not in self.schemes:
            raise EgressRefusedError(
                f"{url!r}: scheme {parts.scheme!r} refused by the egress policy "
                f"(accepted: {', '.join(sorted(self.schemes))})"
            )
        if not parts.hostname:
            raise EgressRefusedError(f"{url!r}: no host")
        return parts

    def check_redirect(self, source: str, target: str) -> SplitResult:
        """:meth:`check_url` of a redirect ``target``, which may not change the scheme of
        ``source`` other than the upgrade http -> https."""
        parts = self.check_url(target)
        before, after = urlsplit(source).scheme.lower(), parts.scheme.lower()
        if before != after and (before, after) != ("http", "https"):
            raise EgressRefusedError(
                f"{source!r} redirected to {target!r}: a scheme change is refused"
            )
        return parts

    def resolve(
        self, host: str, port: int, *, timeout: float | None = None
    ) -> list[ResolvedAddress]:
        """The addresses of ``host``, each checked; refused when any one is refused (a
        name that also points inside is not trusted for its public addresses).

        ``timeout`` bounds the lookup (the resolver runs in a worker thread)."""
        literal = _ip_literal(host)
        if literal is not None:
            self.check_address(literal, url=host)
        try:
            if timeout is None:
                infos = self.resolver(host, port)
            else:
                infos = _call_within(self.resolver, host, port, timeout=timeout)
        except TimeoutError:
            raise
        except OSError as exc:
            raise OSError(f"cannot resolve {host!r}: {exc}") from exc
        addresses = [ResolvedAddress(info[0], tuple(info[4])) for info in infos]
        if not addresses:
            raise OSError(f"cannot resolve {host!r}: no address")
        for address in addresses:
            self.check_address(address.ip, url=host)
        return addresses

    def create_connection(
        self,
        host: str,
        port: int,
        *,
        timeout: float | None = None,
        source_address: tuple[str, int] | None = None,
    ) -> socket.socket:
        """A TCP socket connected to a checked address of ``host`` (the one resolved
        here, so DNS cannot change it afterwards), trying each address in turn."""
        last: OSError | None = None
        for address in self.resolve(host, port, timeout=timeout):
            sock = socket.socket(address.family, socket.SOCK_STREAM)
            try:
                sock.settimeout(timeout)
                if source_address is not None:
                    sock.bind(source_address)
                sock.connect(address.sockaddr)
            except OSError as exc:
                sock.close()
                last = exc
                continue
            except BaseException:  # KeyboardInterrupt mid-connect: nobody else can close it
                sock.close()
                raise
            return sock
        assert last is not None
        raise last


def _ip_literal(host: str) -> IPAddress | None:
    """``host`` as an address when it is written as one (brackets and zone removed)."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


_LOOKUPS = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="ragloom-dns")


def _call_within(
    resolver: Resolver, host: str, port: int, *, timeout: float
) -> Sequence[tuple[Any, ...]]:
    future = _LOOKUPS.submit(resolver, host, port)
    try:
        return future.result(timeout=max(0.0, timeout))
    except concurrent.futures.TimeoutError as exc:
        raise TimeoutError(f"resolving {host!r} took longer than {timeout:.3g} s") from exc


DEFAULT_EGRESS_POLICY = EgressPolicy()
"""Public addresses only, http and https: the default for URLs from untrusted text."""

ALLOW_ALL = EgressPolicy(allow_private_addresses=True)
"""Every address (still http and https only): for URLs from the caller's own configuration."""
