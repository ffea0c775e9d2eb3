"""pytest plugin that fails the session on any attempt to reach the network.

Load it with ``-p network_guard`` (this folder, ``tests/helpers/``, must be importable: it is
for the project's own test runs; elsewhere put it on ``PYTHONPATH``)::

    PYTHONPATH=tests/helpers pytest -p network_guard example_suite

While the session runs, ``socket.socket.connect``, ``socket.socket.connect_ex``,
``socket.create_connection`` and ``socket.getaddrinfo`` refuse every internet address
(IPv4/IPv6) and every lookup of a host name other than ``localhost``: the call raises
:class:`NetworkAccessBlocked` (an ``OSError``, so code sees what it would see offline) and is
recorded. Unix sockets and numeric or ``localhost`` lookups are allowed. Because code may
swallow the error (retry, fall back), the session fails at the end whenever anything was
recorded, listing every attempt; under pytest-xdist each worker's attempts reach the
controller. ``--network-guard-allow=HOST:PORT`` (repeatable) admits one endpoint, e.g. the
local server of an HTTP judge, so a test can also prove that nothing *else* is contacted.

Not covered: raw ``sendto`` on unconnected UDP sockets, and sockets made by C extensions that
bypass Python's ``socket`` module.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

ALLOW_FLAG = "--network-guard-allow"
WORKER_KEY = "network_guard_attempts"
INTERNET = (socket.AF_INET, socket.AF_INET6)
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class NetworkAccessBlocked(OSError):
    """Raised instead of reaching the network while the guard is installed."""


def _is_numeric(host: str) -> bool:
    for family in INTERNET:
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return True
    return False


def _endpoint(address: Any) -> tuple[str, int | None]:
    if isinstance(address, tuple) and address:
        host = address[0] if isinstance(address[0], str) else str(address[0])
        port = address[1] if len(address) > 1 and isinstance(address[1], int) else None
        return host, port
    return str(address), None


class NetworkGuard:
    """Replaces the socket entry points; records and refuses what is not allowed."""

    def __init__(self, allowed: set[tuple[str, int]]) -> None:
        self.allowed = allowed
        self.attempts: list[str] = []
        self._saved: list[tuple[Any, str, Any]] = []

    def _refuse(self, what: str) -> NetworkAccessBlocked:
        self.attempts.append(what)
        return NetworkAccessBlocked(f"network access blocked by network_guard: {what}")

    def _check(self, family: int, address: Any, call: str) -> None:
        if family not in INTERNET:
            return
        host, port = _endpoint(address)
        if port is not None and (host, port) in self.allowed:
            return
        raise self._refuse(f"{call} to {host}:{port}")

    def install(self) -> None:
        guard = self
        connect = socket.socket.connect
        connect_ex = socket.socket.connect_ex
        create_connection = socket.create_connection
        getaddrinfo = socket.getaddrinfo

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            guard._check(sock.family, address, "socket.connect")
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            guard._check(sock.family, address, "socket.connect_ex")
            return connect_ex(sock, address)

        def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
            host, port = _endpoint(address)
            if port is None or (host, port) not in guard.allowed:
                raise guard._refuse(f"socket.create_connection to {host}:{port}")
            return create_connection(address, *args, **kwargs)

        def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else host
            local = name is None or name in LOCAL_NAMES or _is_numeric(str(name))
            if not local and (name, port) not in guard.allowed:
                raise guard._refuse(f"socket.getaddrinfo of {name}:{port}")
            return getaddrinfo(host, port, *args, **kwargs)

        replacements: list[tuple[Any, str, Callable[..., Any]]] = [
            (socket.socket, "connect", guarded_connect),
            (socket.socket, "connect_ex", guarded_connect_ex),
            (socket, "create_connection", guarded_create_connection),
            (socket, "getaddrinfo", guarded_getaddrinfo),
        ]
        for owner, name, replacement in replacements:
            self._saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, replacement)

    def uninstall(self) -> None:
        while self._saved:
            owner, name, original = self._saved.pop()
            setattr(owner, name, original)


GUARD_KEY = pytest.StashKey[NetworkGuard]()
ATTEMPTS_KEY = pytest.StashKey["list[str]"]()


def _parse_allowed(values: list[str] | None) -> set[tuple[str, int]]:
    allowed = set()
    for value in values or []:
        host, _, port = value.rpartition(":")
        if not host or not port.isdigit():
            raise pytest.UsageError(f"{ALLOW_FLAG}: {value!r} is not HOST:PORT")
        allowed.add((host.strip("[]"), int(port)))
    return allowed


def pytest_addoption(parser: pytest.Parser) -> None:
    """The allow-list option."""
    parser.getgroup("network_guard").addoption(
        ALLOW_FLAG,
        action="append",
        metavar="HOST:PORT",
        dest="network_guard_allow",
        help="let the network guard admit this endpoint (repeatable)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Install before conftest files are imported, so their import is guarded too."""
    allowed = _parse_allowed(early_config.known_args_namespace.network_guard_allow)
    guard = NetworkGuard(allowed)
    guard.install()
    early_config.stash[GUARD_KEY] = guard
    early_config.stash[ATTEMPTS_KEY] = []


def pytest_configure(config: pytest.Config) -> None:
    """Collect the workers' attempts when pytest-xdist runs the session."""
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_XdistController(config), "network-guard-xdist")


class _XdistController:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """Add the attempts a worker recorded."""
        output = getattr(node, "workeroutput", None) or {}
        self.config.stash[ATTEMPTS_KEY].extend(output.get(WORKER_KEY, []))


def _attempts(config: pytest.Config) -> list[str]:
    guard = config.stash.get(GUARD_KEY, None)
    own = guard.attempts if guard is not None else []
    return [*own, *config.stash.get(ATTEMPTS_KEY, [])]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the session if anything tried to reach the network (workers report upward)."""
    config = session.config
    if hasattr(config, "workeroutput"):
        config.workeroutput[WORKER_KEY] = list(_attempts(config))
        return
    if _attempts(config) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """List every blocked attempt (or say there was none)."""
    if hasattr(config, "workeroutput"):
        return
    attempts = _attempts(config)
    if not attempts:
        terminalreporter.write_line("network_guard: no network access attempted")
        return
    terminalreporter.write_sep("=", f"network_guard: {len(attempts)} blocked network access")
    for attempt in attempts:
        terminalreporter.write_line(f"  {attempt}", red=True)
    terminalreporter.write_line(
        "network_guard: the session fails; code under test must not reach the network"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put the socket functions back (in-process pytester runs share the module)."""
    guard = config.stash.get(GUARD_KEY, None)
    if guard is not None:
        guard.uninstall()
