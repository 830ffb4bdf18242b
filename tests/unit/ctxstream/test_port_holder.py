"""The holder of a taken port, as a refusal names it: this test's own listening socket."""

from __future__ import annotations

import os
import socket

from ctxstream.cli.port_holder import holder_text, is_taken, port_taken


def test_a_port_this_process_listens_on_is_taken_by_this_pid() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]

        assert is_taken(port)
        assert holder_text(port).startswith(f"pid {os.getpid()} (")
        reason = port_taken(port, "CTXSTREAM_KAFKA_PORT=<another port>")
    assert reason.startswith(f"port {port} on 127.0.0.1 is taken by pid {os.getpid()} (")
    assert "python" in reason
    assert reason.endswith("; move it: CTXSTREAM_KAFKA_PORT=<another port>")


def test_a_free_port_is_not_taken_and_has_no_holder() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert not is_taken(port)
    assert holder_text(port) == "another process"
