"""The listening sockets of `crow serve`, bound by crow before uvicorn starts.

uvicorn binds its own and, when the port is taken, logs its start-up lines, the error and its
shutdown, then exits 1. Bound here, a taken port is one ConfigError (`crow:` line, status 3), and
the sockets uvicorn is given are the very ones checked: nothing can take the port in between.
"""

from __future__ import annotations

import errno
import socket

from ..errors import ConfigError


class CannotListen(ConfigError):
    """The address cannot be listened on: the port is taken, the host is not this machine's, ..."""


def listen(host: str, port: int) -> list[socket.socket]:
    """Bound sockets for every address `host` resolves to, as asyncio's create_server binds them."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    addresses = list(dict.fromkeys((family, kind, proto, address) for family, kind, proto, _, address in infos))
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, address in addresses:
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except OSError as exc:
        for sock in bound:
            sock.close()
        why = "the port is already in use; choose another --port" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise CannotListen(f"cannot listen on {host}:{port}: {why}") from None
    return bound
