"""The egress policy (ragloom.core.kit.egress): every internal address form is refused,
before any connection, and a connection goes to the address that was checked."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from ragloom.core.errors import EgressRefusedError, InvalidArgumentError
from ragloom.core.kit.egress import ALLOW_ALL, DEFAULT_EGRESS_POLICY, EgressPolicy

# Every form the hostile probe used (issue 32, item 2), resolved by the system resolver
# where it is a name or a short/decimal form (no traffic leaves the machine).
REFUSED_HOSTS = [
    "127.0.0.1",
    "localhost",
    "127.1",
    "2130706433",
    "169.254.169.254",
    "[::ffff:169.254.169.254]",
    "::ffff:169.254.169.254",
    "::1",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "0.0.0.0",
    "100.64.0.1",  # shared (CGNAT)
    "fd00::1",  # unique-local
    "fe80::1",  # link-local
    "224.0.0.1",  # multicast
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
]


def resolver(table: dict[str, Sequence[str]]) -> Any:
    """A getaddrinfo-shaped resolver answering from ``table`` (other names: no address)."""

    def resolve(host: str, port: int) -> list[tuple[Any, ...]]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} unknown")
        return [
            (
                socket.AF_INET6 if ":" in ip else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (ip, port),
            )
            for ip in table[host]
        ]

    return resolve


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_every_internal_form_is_refused(host: str) -> None:
    with pytest.raises(EgressRefusedError, match="refused by the egress policy"):
        DEFAULT_EGRESS_POLICY.resolve(host.strip("[]"), 80)


def test_a_name_resolving_inside_is_refused() -> None:
    policy = EgressPolicy(resolver=resolver({"metadata.google.internal": ["169.254.169.254"]}))
    with pytest.raises(EgressRefusedError, match="link-local address 169.254.169.254"):
        policy.resolve("metadata.google.internal", 80)


def test_one_inside_answer_among_public_ones_refuses_the_name() -> None:
    policy = EgressPolicy(resolver=resolver({"mixed.example": ["93.184.216.34", "10.0.0.1"]}))
    with pytest.raises(EgressRefusedError, match="10.0.0.1"):
        policy.resolve("mixed.example", 80)


def test_public_addresses_pass() -> None:
    policy = EgressPolicy(resolver=resolver({"example.com": ["93.184.216.34", "2606:2800::1"]}))
    assert [str(a.ip) for a in policy.resolve("example.com", 443)] == [
        "93.184.216.34",
        "2606:2800::1",
    ]


def test_opt_outs() -> None:
    ALLOW_ALL.resolve("127.0.0.1", 80)
    intranet = EgressPolicy(allowed_networks=("10.20.0.0/16",))
    intranet.resolve("10.20.1.2", 80)
    with pytest.raises(EgressRefusedError):
        intranet.resolve("10.21.1.2", 80)
    with pytest.raises(InvalidArgumentError, match="not a network"):
        EgressPolicy(allowed_networks=("nonsense",))


@pytest.mark.parametrize(
    "url", ["ftp://example.com/x", "file:///etc/passwd", "gopher://example.com/", "http:///x"]
)
def test_only_http_urls_with_a_host(url: str) -> None:
    with pytest.raises(EgressRefusedError):
        DEFAULT_EGRESS_POLICY.check_url(url)


def test_redirects_may_not_change_scheme_except_the_upgrade() -> None:
    DEFAULT_EGRESS_POLICY.check_redirect("http://example.com/", "https://example.com/")
    with pytest.raises(EgressRefusedError, match="scheme change"):
        DEFAULT_EGRESS_POLICY.check_redirect("https://example.com/", "http://example.com/")
    with pytest.raises(EgressRefusedError, match="'ftp'"):
        DEFAULT_EGRESS_POLICY.check_redirect("http://example.com/", "ftp://127.0.0.1/")


class Listener:
    """A loopback TCP listener that records every connection it accepts."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[tuple[str, int]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.accepted.append(peer)
            conn.close()


@pytest.fixture
def listeners() -> Iterator[tuple[Listener, Listener]]:
    checked, internal = Listener("127.0.0.2"), Listener("127.0.0.1")
    yield checked, internal
    checked.sock.close()
    internal.sock.close()


def test_dns_rebinding_cannot_switch_the_connected_address(
    listeners: tuple[Listener, Listener],
) -> None:
    """The name answers an allowed address, then (rebinding) a loopback one: the
    connection goes to the first, checked answer, and the name is resolved once."""
    checked, internal = listeners
    answers = iter([["127.0.0.2"], ["127.0.0.1"]])
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[tuple[Any, ...]]:
        calls.append(host)
        return resolver({host: next(answers)})(host, port)

    # 127.0.0.2 stands in for a public address (a loopback one, so nothing leaves).
    policy = EgressPolicy(allowed_networks=("127.0.0.2/32",), resolver=rebinding)
    with policy.create_connection("rebind.example", checked.port, timeout=5) as sock:
        assert sock.getpeername()[0] == "127.0.0.2"
    assert calls == ["rebind.example"]
    assert internal.accepted == []
    with pytest.raises(EgressRefusedError, match="127.0.0.1"):  # a second lookup is refused
        policy.create_connection("rebind.example", internal.port, timeout=5)
    assert internal.accepted == []
