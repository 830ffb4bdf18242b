"""Record ctxstream's conformance vectors from google-adk 2.13.0 itself.

Runs in a throwaway virtualenv with google-adk installed (see README.md here);
it imports ADK and its own modules (``tests.recorder``), never the project.
Usage, from the repository's root::

    python tests/recorder/record.py --out tests/conformance/vectors
    python tests/recorder/record.py --verify DIR   # recompute DIR's expected values with ADK

``--out`` writes one JSON Lines file per kind (``contents``, ``sliding_window``,
``token_threshold``, ``summarizer_render``, ``session_state``,
``compaction_decisions``), one vector per line, keys sorted, so a second run
writes the same bytes. ``--verify`` reads every ``<kind>.jsonl`` of the five
ADK kinds in DIR, recomputes each vector's ``expected`` from its ``input`` with
ADK and reports the vectors whose recorded value differs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

#: String hashing decides the iteration order of sets inside ADK; a fixed seed
#: makes every run take the same paths.
HASH_SEED = "0"

if not __package__:  # run as a script: make ``tests.recorder`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _pin_hash_seed() -> None:
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        environment = {**os.environ, "PYTHONHASHSEED": HASH_SEED}
        os.execve(sys.executable, [sys.executable, *sys.argv], environment)  # noqa: S606


def _vector(kind: str, index: int, slug: str, description: str, **fields: Any) -> dict[str, Any]:
    from tests.recorder import adk_oracle

    return {
        "id": f"{kind}/{index:03d}-{slug}",
        "kind": kind,
        "index": index,
        "description": description,
        "adk_version": adk_oracle.ADK_VERSION,
        "event_serialization": adk_oracle.EVENT_SERIALIZATION,
        **fields,
    }


def _as_written(value: Any) -> Any:
    """`value` as a reader of the file gets it back (keys sorted, JSON types)."""
    return json.loads(json.dumps(value, sort_keys=True))


def record_kind(kind: str) -> list[dict[str, Any]]:
    """Every vector of one of the five ADK kinds, expected values computed by ADK."""
    from tests.recorder import adk_oracle, scenarios

    vectors = []
    for index, scenario in enumerate(scenarios.SCENARIOS[kind], start=1):
        vector_input = dict(scenario.input)
        ids = [event["id"] for event in vector_input["events"]]
        if kind != "session_state" and len(set(ids)) != len(ids):
            raise ValueError(f"{kind} {scenario.slug}: event ids repeat: {ids}")
        events = adk_oracle.parse_events(vector_input["events"])
        vector_input["events"] = [adk_oracle.dump_event(event) for event in events]
        vector_input = _as_written(vector_input)
        expected = _as_written(adk_oracle.EXPECTED[kind](vector_input))
        vectors.append(
            _vector(
                kind,
                index,
                scenario.slug,
                scenario.description,
                input=vector_input,
                expected=expected,
            )
        )
    return vectors


def record_decisions() -> list[dict[str, Any]]:
    """Every ``compaction_decisions`` vector: the scenarios run through ADK's runner."""
    from tests.recorder import decision_runner, decision_scenarios

    vectors = []
    for index, scenario in enumerate(decision_scenarios.SCENARIOS, start=1):
        vector_input, expected, hooks = decision_runner.record_decisions(scenario)
        vectors.append(
            _vector(
                "compaction_decisions",
                index,
                scenario.slug,
                scenario.description,
                input=_as_written(vector_input),
                expected=_as_written(expected),
                adk_hooks=hooks,
            )
        )
    return vectors


def write_vectors(path: Path, vectors: Iterable[dict[str, Any]]) -> int:
    """Write `vectors` as JSON Lines (sorted keys); the number written."""
    lines = [json.dumps(vector, sort_keys=True) + "\n" for vector in vectors]
    path.write_text("".join(lines), encoding="utf-8")
    return len(lines)


def verify(directory: Path) -> int:
    """Recompute the expected value of every vector in `directory`; 0 when all agree."""
    from tests.recorder import adk_oracle

    checked = differ = 0
    for kind, expected_of in adk_oracle.EXPECTED.items():
        path = directory / f"{kind}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            vector = json.loads(line)
            checked += 1
            actual = _as_written(expected_of(vector["input"]))
            if actual != vector["expected"]:
                differ += 1
                _say(f"DIFFERS {vector['id']}")
                _say(f"  recorded: {json.dumps(vector['expected'], sort_keys=True)}")
                _say(f"  ADK now:  {json.dumps(actual, sort_keys=True)}")
    _say(f"{checked} checked, {differ} differ")
    return 0 if checked and not differ else 1


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    """Record (``--out``) or verify (``--verify``) vectors."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--out", type=Path, help="folder to write the vector files to")
    action.add_argument("--verify", type=Path, help="folder of vector files to recompute")
    args = parser.parse_args(argv)
    _pin_hash_seed()
    # ADK marks compaction experimental and warns about it on every config.
    warnings.simplefilter("ignore")
    if args.verify is not None:
        return verify(args.verify)
    from tests.recorder import adk_oracle

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    recorders: dict[str, Callable[[], list[dict[str, Any]]]] = {
        kind: functools.partial(record_kind, kind) for kind in adk_oracle.EXPECTED
    }
    recorders["compaction_decisions"] = record_decisions
    for kind, recorder in recorders.items():
        started = time.monotonic()
        count = write_vectors(out / f"{kind}.jsonl", recorder())
        _say(f"{kind}: {count} vectors in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
