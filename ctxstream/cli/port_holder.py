"""Which process holds a TCP port on this machine, for a refusal that says how to free it.

Read from ``/proc`` without root: ``/proc/net/tcp`` and ``/proc/net/tcp6``
give the inode of every socket bound to the port, and the process is the one
with ``socket:[<inode>]`` among its file descriptors. The descriptors of
another user's processes cannot be read without root: such a holder is named
as "a process of another user". Nothing here changes anything.

Example: ``port_taken(19092, "CTXSTREAM_KAFKA_PORT=<another port>")`` ->
``port 19092 on 127.0.0.1 is taken by pid 4711 (java ... kafka.Kafka ...);
move it: CTXSTREAM_KAFKA_PORT=<another port>``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Final

from schemas.log_text import shown

HOST: Final = "127.0.0.1"
PROC: Final = Path("/proc")
#: A holder's command line is cut to this many characters.
COMMAND_CHARS: Final = 200
_SOCKET_TABLES: Final = ("net/tcp", "net/tcp6")
_TIME_WAIT: Final = "06"


def is_taken(port: int) -> bool:
    """Whether `port` cannot be bound on 127.0.0.1 now, by a server as servers bind.

    With ``SO_REUSEADDR``, as the broker, PostgreSQL and the HTTP server bind:
    the connections a stopped server leaves in TIME_WAIT do not count, a
    listening socket does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return True
    return False


def port_taken(port: int, move: str) -> str:
    """The reason of a refusal: who holds `port` on 127.0.0.1, and `move`, how to choose another."""
    return f"port {port} on {HOST} is taken by {holder_text(port)}; move it: {move}"


def holder_text(port: int) -> str:
    """``pid N (command line)`` of `port`'s holder, or what can be said without its pid."""
    inodes = socket_inodes(port)
    if not inodes:
        return "another process"
    found = holder(inodes)
    if found is None:
        return "a process of another user (its pid is visible to root only)"
    pid, command = found
    return f"pid {pid} ({command})"


def socket_inodes(port: int) -> set[str]:
    """The inodes of the sockets whose local port is `port` (TIME_WAIT ones have none)."""
    inodes: set[str] = set()
    for table in _SOCKET_TABLES:
        try:
            lines = (PROC / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] == _TIME_WAIT or fields[9] == "0":
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def holder(inodes: set[str]) -> tuple[int, str] | None:
    """The pid and command line of a process holding one of the sockets `inodes` (None: unseen)."""
    links = {f"socket:[{inode}]" for inode in inodes}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue  # another user's process, or gone meanwhile
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target in links:
                return int(entry.name), _command(entry)
    return None


def _command(entry: Path) -> str:
    try:
        raw = (entry / "cmdline").read_bytes()
    except OSError:
        return "command line unreadable"
    return shown(raw.replace(b"\0", b" ").decode(errors="replace").strip(), COMMAND_CHARS)
