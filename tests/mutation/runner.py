"""Mutation testing of the pure core and the batch step with mutmut.

``tests/mutation/run`` runs this file with the system's python (standard library only). It

1. creates (or reuses) a virtualenv of its own under ``.mutation/venv`` with the project's
   dependencies and mutmut (see :data:`MUTMUT`), rebuilt when the dependencies change;
2. copies the working tree (tracked and untracked files that git does not ignore), or the commit
   given with ``--rev``, into a scratch folder ``.mutation/work/<target>``, so mutmut's
   ``mutants/`` folder never lands in the working tree;
3. runs ``mutmut run`` there on one target with the unit and conformance tests;
4. prints each target's counts and score and every surviving mutant with its change, and marks
   the survivors that ``tests/mutation/equivalent.json`` explains as equivalent.

The score is ``killed / (killed + survived + timeout)``: a timeout counts against the score (a
mutant that only makes the tests run past mutmut's limit was not caught by an assertion), and so
does a mutant no selected test reaches (mutmut's "no tests", counted as survived). Equivalent
mutants stay in the score; the report says how many of the survivors the list explains.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
EQUIVALENT_FILE: Final = ROOT / "tests" / "mutation" / "equivalent.json"

#: mutmut's version: 3.8.1 needs click >= 8.4.2, which faust-streaming's pin (click < 8.4)
#: refuses, hence the virtualenv of its own. The tests that run here never load faust's CLI.
MUTMUT: Final = "mutmut==3.8.1"

#: What mutmut is run on: the paths it mutates.
TARGETS: Final[Mapping[str, tuple[str, ...]]] = {
    "projections": ("projections",),
    "schemas": ("schemas",),
    "batch": ("streams/batch",),
}

#: What each target leaves unmutated: the modules of schemas/kafka/ that talk to the broker
#: (their tests are the broker tests, which mutants are not run against); the folder's pure
#: parts (settings, partitioning) stay in.
NOT_MUTATED: Final[Mapping[str, tuple[str, ...]]] = {
    "schemas": (
        "schemas/kafka/admin.py",
        "schemas/kafka/committed_range.py",
        "schemas/kafka/transaction.py",
    ),
}

#: The tests each mutant is tested with: those that need no broker nor database, less the
#: summarizer backend's HTTP tests, whose 0.2 s timeouts a machine busy with mutants cannot keep
#: (they reach none of the targets' code that other tests do not).
TEST_SELECTION: Final = (
    "tests/unit",
    "tests/conformance",
    "--ignore=tests/unit/summarizer_worker/test_openai_chat.py",
)

#: pytest's options for every run: the test command's own, hypothesis' ``ci`` profile
#: (derandomized, no deadline) so that a mutant's verdict does not depend on the run, and the
#: plugin that orders the tests and caps the properties' examples (see its docstring).
PYTEST_ARGS: Final = (
    "-p",
    "no:cacheprovider",
    "-W",
    "ignore::DeprecationWarning",
    "--hypothesis-profile",
    "ci",
    "-p",
    "tests.mutation.pytest_plugin",
)

#: mutmut's statuses as this report counts them (the docstring says why).
COUNTED_AS: Final[Mapping[str, str]] = {
    "killed": "killed",
    "survived": "survived",
    "no tests": "survived",
    "suspicious": "survived",
    "timeout": "timeout",
    # SIGKILL after the hard CPU limit (mutmut calls every -9 and -11 a segfault)
    "segfault": "timeout",
    "caught by type check": "killed",
}

#: Prints mutmut's status and, for every mutant not killed, its change; run by the venv's python
#: inside the scratch folder, where mutmut reads its configuration.
_RESULTS_SCRIPT: Final = """
import json, sys
from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files

results = {}
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    for name, exit_code in data.exit_code_by_key.items():
        status = status_by_exit_code[exit_code]
        diff = None if status == "killed" else get_diff_for_mutant(name, path=path)
        results[name] = {"status": status, "exit_code": exit_code, "diff": diff}
json.dump(results, sys.stdout)
"""


def say(line: str = "") -> None:
    """Write one line to stdout at once (the runs are long: progress shows as it happens)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class RunError(RuntimeError):
    """A step of the run failed; the message says which and shows its output's end."""


@dataclass
class Mutant:
    """One mutant's verdict."""

    name: str
    status: str
    change: str | None

    @property
    def counted(self) -> str:
        """The report's count this mutant falls in."""
        return COUNTED_AS.get(self.status, "other")


@dataclass
class TargetResult:
    """The counts of one target."""

    target: str
    seconds: float
    mutants: list[Mutant]
    equivalent: dict[str, str] = field(default_factory=dict)

    def count(self, kind: str) -> int:
        """How many mutants the report counts as ``kind``."""
        return sum(1 for mutant in self.mutants if mutant.counted == kind)

    @property
    def score(self) -> float:
        """killed / (killed + survived + timeout); 0.0 when there is no mutant."""
        killed = self.count("killed")
        tested = killed + self.count("survived") + self.count("timeout")
        return killed / tested if tested else 0.0

    def survivors(self) -> list[Mutant]:
        """The mutants counted as survived."""
        return [mutant for mutant in self.mutants if mutant.counted == "survived"]

    def unexplained(self) -> list[Mutant]:
        """Survivors the equivalence list does not explain (or explains for another change)."""
        return [mutant for mutant in self.survivors() if mutant.name not in self.equivalent]

    def as_json(self) -> dict[str, object]:
        """The target's entry of the ``--json`` file."""
        return {
            "killed": self.count("killed"),
            "survived": self.count("survived"),
            "timeout": self.count("timeout"),
            "score": round(self.score, 4),
            "no_tests": sum(1 for mutant in self.mutants if mutant.status == "no tests"),
            "equivalent": len(self.equivalent),
            "unexplained": [mutant.name for mutant in self.unexplained()],
            "timeouts": [mutant.name for mutant in self.mutants if mutant.counted == "timeout"],
            "seconds": round(self.seconds, 1),
        }


def _run(command: Sequence[str], *, cwd: Path, log: Path | None = None) -> str:
    """Run ``command``; returns its stdout (or writes stdout and stderr to ``log``)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if log is None:
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        output, returncode = result.stdout + result.stderr, result.returncode
    else:
        with log.open("w") as out:
            returncode = subprocess.run(
                command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
            ).returncode
        output = log.read_text(errors="replace")
    if returncode != 0:
        raise RunError(f"{' '.join(command)} exited with {returncode}:\n{output[-4000:]}")
    return result.stdout if log is None else output


def requirements() -> list[str]:
    """The project's dependencies and its dev and adk extras, as pyproject.toml lists them.

    The adk extra: the conformance tests and the ADK oracles of the unit tests import it.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return [*project["dependencies"], *extras["dev"], *extras["adk"]]


def ensure_venv(cache: Path) -> Path:
    """The virtualenv's python, created or rebuilt when the requirements changed."""
    venv = cache / "venv"
    python = venv / "bin" / "python"
    wanted = json.dumps(
        {"python": sys.version, "requirements": requirements(), "mutmut": MUTMUT}, sort_keys=True
    )
    stamp = venv / "ctxstream-requirements.json"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    say(f"mutation: creating the virtualenv {venv}")
    shutil.rmtree(venv, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", str(venv)], cwd=ROOT)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    _run([*pip, *requirements()], cwd=ROOT)
    # A second step: pip upgrades click past faust-streaming's pin and only warns about it.
    _run([*pip, MUTMUT], cwd=ROOT)
    stamp.write_text(wanted)
    return python


def copy_tree(scratch: Path, rev: str | None) -> None:
    """The repository's files in ``scratch``: the working tree's, or those of commit ``rev``."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    if rev is not None:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
        return
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            destination = scratch / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def write_config(scratch: Path, target: str) -> None:
    """mutmut's settings for ``target`` (in setup.cfg: pyproject.toml stays as it is)."""
    paths = TARGETS[target]
    mutated_dirs = {path for path in paths if (scratch / path).is_dir()}
    # Everything else goes into mutants/ unchanged: the tests import the other packages too.
    also_copy = sorted(
        entry.name
        for entry in scratch.iterdir()
        if entry.name not in mutated_dirs and entry.name not in {"mutants", "setup.cfg"}
    )

    def lines(values: Sequence[str]) -> str:
        return "".join(f"\n    {value}" for value in values)

    (scratch / "setup.cfg").write_text(
        "[mutmut]\n"
        f"source_paths ={lines(paths)}\n"
        f"do_not_mutate ={lines(NOT_MUTATED.get(target, ()))}\n"
        f"also_copy ={lines(also_copy)}\n"
        f"pytest_add_cli_args_test_selection ={lines(TEST_SELECTION)}\n"
        f"pytest_add_cli_args ={lines(PYTEST_ARGS)}\n"
        # the scratch folder lies inside the repository: git would describe the working tree
        "use_git_change_detection = false\n"
    )


def load_equivalent() -> dict[str, dict[str, str]]:
    """The checked-in list: mutant name -> {"change": ..., "reason": ...}."""
    if not EQUIVALENT_FILE.exists():
        return {}
    loaded: dict[str, dict[str, str]] = json.loads(EQUIVALENT_FILE.read_text())
    return loaded


def change_of(diff: str | None) -> str:
    """A mutant's change as its removed and added lines, stripped, joined by `` | ``."""
    if diff is None:
        return ""
    changed = [
        f"{line[0]} {line[1:].strip()}"
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return " | ".join(changed)


def run_target(
    target: str, *, python: Path, cache: Path, rev: str | None, jobs: int, only: Sequence[str]
) -> TargetResult:
    """Run mutmut on one target in a fresh scratch copy; returns its verdicts."""
    scratch = cache / "work" / target
    started = time.monotonic()
    copy_tree(scratch, rev)
    write_config(scratch, target)
    log = cache / f"{target}.log"
    say(f"mutation: {target}: running mutmut in {scratch} (log: {log})")
    mutmut = python.parent / "mutmut"
    try:
        _run([str(mutmut), "run", "--max-children", str(jobs), *only], cwd=scratch, log=log)
    except RunError as error:
        raise RunError(f"mutmut failed on {target}: {error}") from None
    seconds = time.monotonic() - started
    raw = json.loads(_run([str(python), "-c", _RESULTS_SCRIPT], cwd=scratch))
    mutants = [
        Mutant(name=name, status=entry["status"], change=change_of(entry["diff"]) or None)
        for name, entry in sorted(raw.items())
        if entry["status"] != "skipped" and (not only or entry["status"] != "not checked")
    ]
    listed = load_equivalent()
    equivalent = {
        mutant.name: listed[mutant.name]["reason"]
        for mutant in mutants
        if mutant.counted == "survived"
        and mutant.name in listed
        and listed[mutant.name].get("change") == mutant.change
    }
    return TargetResult(target=target, seconds=seconds, mutants=mutants, equivalent=equivalent)


def report(result: TargetResult) -> None:
    """Print one target's counts, its survivors and its timeouts."""
    say(
        f"\n{result.target}: {len(result.mutants)} mutants, killed {result.count('killed')}, "
        f"survived {result.count('survived')}, timeout {result.count('timeout')}, "
        f"score {result.score:.3f} ({result.seconds:.0f} s)"
    )
    survivors = result.survivors()
    if survivors:
        say(
            f"{len(survivors)} surviving mutants, {len(result.equivalent)} of them listed as "
            f"equivalent in {EQUIVALENT_FILE.relative_to(ROOT)}:"
        )
    for mutant in survivors:
        mark = "equivalent" if mutant.name in result.equivalent else mutant.status
        say(f"  [{mark}] {mutant.name}: {mutant.change}")
    for mutant in result.mutants:
        if mutant.counted == "timeout":
            say(f"  [{mutant.status}] {mutant.name}: {mutant.change}")
    other = [mutant for mutant in result.mutants if mutant.counted == "other"]
    for mutant in other:
        say(f"  [{mutant.status}, not counted] {mutant.name}")


def stale_entries(results: Sequence[TargetResult]) -> list[str]:
    """Listed equivalents of the run targets that no longer survive with the listed change."""
    run_modules = {
        path.removesuffix(".py").replace("/", ".")
        for result in results
        for path in TARGETS[result.target]
    }
    explained = {name for result in results for name in result.equivalent}
    return sorted(
        name
        for name in load_equivalent()
        if any(name.startswith(f"{module}.") for module in run_modules) and name not in explained
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, run the targets, print and write the report."""
    parser = argparse.ArgumentParser(prog="tests/mutation/run", description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=sorted(TARGETS), help="one target (default: all)")
    parser.add_argument("--json", type=Path, help="write the counts to this file")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants at once")
    parser.add_argument("--rev", help="mutate this commit instead of the working tree")
    parser.add_argument(
        "--mutant",
        action="append",
        default=[],
        metavar="GLOB",
        help="test only the mutants matching this glob (repeatable; needs --target)",
    )
    parser.add_argument(
        "--examples",
        type=int,
        help="examples per hypothesis property at most (default: the plugin's, 20)",
    )
    parser.add_argument("--fail-under", type=float, help="exit 1 when a score is below this")
    options = parser.parse_args(argv)
    if options.mutant and options.target is None:
        parser.error("--mutant needs --target")
    if options.examples is not None:
        os.environ["CTXSTREAM_MUTATION_EXAMPLES"] = str(options.examples)
    cache = Path(os.environ.get("CTXSTREAM_MUTATION_CACHE", ROOT / ".mutation")).resolve()
    targets = [options.target] if options.target else list(TARGETS)
    results: list[TargetResult] = []
    try:
        python = ensure_venv(cache)
        for target in targets:
            result = run_target(
                target,
                python=python,
                cache=cache,
                rev=options.rev,
                jobs=options.jobs,
                only=options.mutant,
            )
            # Each target is reported and written as soon as it is done: the runs are long,
            # and a later target's failure or interruption keeps the earlier ones' figures.
            report(result)
            results.append(result)
            if options.json:
                document = {"targets": {done.target: done.as_json() for done in results}}
                options.json.write_text(json.dumps(document, indent=2) + "\n")
    except RunError as error:
        sys.stderr.write(f"mutation: {error}\n")
        return 2
    if not options.mutant:
        for name in stale_entries(results):
            say(f"  [stale] {name} is listed as equivalent but did not survive as listed")
    if options.fail_under is not None and any(r.score < options.fail_under for r in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
