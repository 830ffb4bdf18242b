"""`ctxstream conformance DIR`: one block per failure, then `N passed, N failed`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxstream.cli.main import main
from projections.conformance import KINDS
from tests.support.vectors import CONFORMANCE_DIR, RECORDED_DIR

#: The kinds recorded from ADK's functions; ``compaction_decisions`` (the
#: runner's own sessions) has a test of its own.
ADK_KINDS = tuple(kind for kind in KINDS if kind != "compaction_decisions")


def _vector_count(directory: Path) -> int:
    return sum(
        1
        for path in directory.glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    )


def test_every_adk_vector_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for kind in ADK_KINDS:
        shutil.copy(CONFORMANCE_DIR / f"{kind}.jsonl", tmp_path)
    status = main(["conformance", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"{_vector_count(tmp_path)} passed, 0 failed"
    assert "FAIL" not in out
    assert status == 0


def test_decision_vectors_are_replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = (RECORDED_DIR / "compaction_decisions.jsonl").read_text(encoding="utf-8")
    first = json.loads(source.splitlines()[0])
    broken = {**first, "id": "compaction_decisions/999-broken"}
    broken["expected"] = {"compactions": first["expected"]["compactions"][1:]}
    (tmp_path / "compaction_decisions.jsonl").write_text(
        f"{json.dumps(first)}\n{json.dumps(broken)}\n", encoding="utf-8"
    )
    status = main(["conformance", str(tmp_path)])
    out = capsys.readouterr().out
    assert first["expected"]["compactions"], "the first decision vector compacts"
    assert out.splitlines()[0] == "FAIL compaction_decisions/999-broken"
    assert out.splitlines()[-1] == "1 passed, 1 failed"
    assert status == 1


def test_a_failing_vector_is_named_with_a_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (CONFORMANCE_DIR / "sliding_window.jsonl").read_text(encoding="utf-8").splitlines()
    broken = json.loads(source[0])
    broken["expected"]["trigger"] = "sliding_window"
    (tmp_path / "sliding_window.jsonl").write_text(
        "\n".join([json.dumps(broken), *source[1:3]]) + "\n", encoding="utf-8"
    )
    status = main(["conformance", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"FAIL {broken['id']}"
    assert '-  "trigger": "sliding_window"' in out
    assert '+  "trigger": null' in out
    assert out.splitlines()[-1] == "2 passed, 1 failed"
    assert status == 1


def test_an_empty_folder_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "0 passed, 0 failed"
