"""The TCP connections a process holds to a port, read from ``/proc`` as ``ss -tnp`` would."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

_ESTABLISHED: Final = "01"  # the state column of /proc/net/tcp


def connections_to(pid: int, port: int) -> int:
    """How many established TCP connections process `pid` holds to remote port `port`.

    A connection is counted when its socket is one of the process's open file
    descriptors: ``/proc/<pid>/net/tcp`` lists the sockets of the whole
    network namespace.
    """
    inodes = _socket_inodes(pid)
    held = 0
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            fields = row.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[3] == _ESTABLISHED and fields[9] in inodes:
                held += 1
    return held


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    folder = f"/proc/{pid}/fd"
    for name in os.listdir(folder):
        try:
            target = os.readlink(f"{folder}/{name}")
        except FileNotFoundError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes
