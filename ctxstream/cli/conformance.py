"""``ctxstream conformance DIR``: run conformance vector files, report each failure, the totals."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from ctxstream.cli.common import Subcommands
from projections.conformance import diff_of


def add_conformance_command(commands: Subcommands) -> None:
    """Add ``conformance`` to the ``ctxstream`` subcommands."""
    conformance = commands.add_parser(
        "conformance", help="replay ADK's conformance vectors (*.jsonl in DIR) against the core"
    )
    conformance.add_argument("directory", metavar="DIR")
    conformance.set_defaults(run=_conformance)


def _conformance(args: argparse.Namespace) -> int:
    return run_conformance(Path(args.directory), sys.stdout)


def run_conformance(directory: Path, out: TextIO) -> int:
    """Run every vector of every ``*.jsonl`` file in `directory`.

    Prints one block per failing vector (its id and a diff of expected vs
    actual) and ends with the line ``N passed, N failed``.

    Returns:
        0 when every vector passed (and there was at least one), else 1.
    """
    files = sorted(directory.glob("*.jsonl"))
    if not files:
        out.write(f"no *.jsonl vector files in {directory}\n")
        out.write("0 passed, 0 failed\n")
        return 1
    passed = failed = 0
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                vector = json.loads(line)
                vector_id = str(vector["id"])
                diff = diff_of(vector)
            except (ValueError, KeyError, TypeError) as exc:
                vector_id, diff = f"{path.name}:{number}", f"unreadable vector: {exc}"
            if diff is None:
                passed += 1
            else:
                failed += 1
                out.write(f"FAIL {vector_id}\n{diff}\n")
    out.write(f"{passed} passed, {failed} failed\n")
    return 0 if failed == 0 and passed > 0 else 1
