"""A child process's memory as the kernel counts it: ``/proc/<pid>/status``."""

from __future__ import annotations

from pathlib import Path


def status_bytes(pid: int, name: str) -> int:
    """A field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``; given in kB), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {name} in /proc/{pid}/status")
