"""Audit requirements.lock for known vulnerabilities; fail on one that has a fixed version.

Usage: ``python deploy/audit.py [LOCK]`` (default: the repository's requirements.lock).

It runs ``pip-audit`` over the hashed lock (no resolution, no install: each
pinned version is looked up as it is) and reads its JSON report:

- a vulnerability with a fixed version: one line each and exit status 1 (raise
  that pin in pyproject.toml, then ``deploy/lock --upgrade-package NAME``);
- a vulnerability without a fix yet: one line each, exit status 0;
- packages the vulnerability service could not look up: counted on one line
  (a service that cannot be reached audits nothing, and says so).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def audit(lock: Path) -> int:
    """Run pip-audit over `lock`; the exit status (1: a fixable vulnerability, 2: no report)."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "audit.json"
        subprocess.run(  # noqa: S603 - our own interpreter and arguments
            [
                sys.executable,
                "-m",
                "pip_audit",
                "--requirement",
                str(lock),
                "--disable-pip",  # the lock is hashed and pinned: nothing to resolve
                "--progress-spinner",
                "off",
                "--format",
                "json",
                "--output",
                str(report),
            ],
            check=False,  # its status is 1 for any vulnerability; the report says which
        )
        if not report.exists():
            _say("audit: pip-audit wrote no report")
            return 2
        found: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    fixable = unfixed = skipped = 0
    for dependency in found.get("dependencies", []):
        if "skip_reason" in dependency:
            skipped += 1
            continue
        for vulnerability in dependency.get("vulns", []):
            fixes = vulnerability.get("fix_versions") or []
            where = f"{dependency['name']} {dependency['version']}: {vulnerability['id']}"
            if fixes:
                fixable += 1
                _say(f"audit: {where}, fixed in {', '.join(fixes)}")
            else:
                unfixed += 1
                _say(f"audit: {where}, no fixed version yet")
    audited = len(found.get("dependencies", [])) - skipped
    _say(
        f"audit: {audited} packages audited, {fixable} vulnerabilities with a fix, "
        f"{unfixed} without one, {skipped} packages the service could not look up"
    )
    return 1 if fixable else 0


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")


if __name__ == "__main__":
    sys.exit(audit(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "requirements.lock"))
