"""Write the wire-format golden files from the records that name them. Run deliberately.

Usage, from the repository root::

    python -m tests.unit.schemas.regenerate_golden

Writes ``tests/unit/schemas/golden/<name>`` for every entry of
:data:`tests.unit.schemas.test_wire_golden.RECORDS`: the encoded record and
one newline. Run it only when a format changes on purpose (a new schema
version), then read the diff of the golden folder before committing it; the
tests never call it. Files that are decode-only inputs (records of released
versions, such as ``dead-letter-v1-before-stage.json``) are not in
``RECORDS`` and are left as they are.
"""

from __future__ import annotations

import sys

from schemas.codec import encode
from tests.unit.schemas.test_wire_golden import GOLDEN, RECORDS


def main() -> None:
    """Write every golden file of RECORDS and say which ones changed."""
    for name, record in sorted(RECORDS.items()):
        path = GOLDEN / name
        content = encode(record) + b"\n"
        before = path.read_bytes() if path.exists() else None
        if before != content:
            path.write_bytes(content)
            sys.stdout.write(f"wrote {path}\n")


if __name__ == "__main__":
    main()
