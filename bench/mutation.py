"""Mutation testing of the decision core (issue 32): does a test fail when a decision changes?

mutmut (the ``dev`` extra) mutates one module at a time and runs, for each mutant, only the
tests of ``MODULES[module]`` that call the mutated function (mutmut traces which tests reach
which function once, then forks one pytest per mutant; ``--jobs`` of them at a time).  A
mutant is *killed* when any of those tests fails or times out; it *survives* otherwise (also
when no mapped test reaches it).  A survivor that no behaviour can tell apart from the original
is listed, with its one-line reason, in ``bench/mutation_equivalent.txt``; every other
survivor is printed with its change, so a test that states the rule can be written.

Each module runs in its own scratch directory ``.mutation/<module>/`` (symlinks to the
packages and tests plus a generated ``pyproject.toml`` whose ``[tool.mutmut]`` names the module
and its tests), so one module's map never selects another's tests.  Logging calls are not
mutated (``DO_NOT_MUTATE``): a log line states no decision.

Run: ``nice -n 10 .venv/bin/python bench/mutation.py [--only SUBSTR ...] [--jobs 2] [--json FILE]``
(needs ``pip install -e '.[dev]'``; a module takes seconds to a few minutes on 2 cores).  Prints
per module: mutants, killed, equivalent, survived and the score killed / (mutants −
equivalent); then each survivor.  Exit 1 when a module scores under ``--min-score`` (90 %).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
EQUIVALENT_FILE = ROOT / "bench" / "mutation_equivalent.txt"
LINKED = ("relay", "selection", "test_specs", "spyre_backend", "tests", "examples", "bench",
          "alembic.ini", "README.md", "docs")
PACKAGES = ("relay", "selection", "test_specs", "spyre_backend")
#: Lines mutmut leaves alone (regular expressions on one source line).
DO_NOT_MUTATE = [r"^\s*(log|logger|_log|LOG)\.(debug|info|warning|error|exception)\("]

_REGRESSION = "tests/regression/"
_SELECTION = "tests/selection/"
#: module → the test files that exercise it (a mutant is killed when one of them fails).
MODULES: dict[str, tuple[str, ...]] = {
    "relay/domain/outcomes.py": (
        _REGRESSION + "test_outcomes.py", _REGRESSION + "test_verdicts.py", _REGRESSION + "test_trunk_history.py",
        "tests/service/test_run_fields.py"),
    "relay/domain/flakiness.py": (
        _REGRESSION + "test_verdicts.py", _REGRESSION + "test_trunk_history.py",
        _REGRESSION + "test_quarantine.py"),
    "relay/domain/verdicts.py": (
        _REGRESSION + "test_verdicts.py", _REGRESSION + "test_trunk_history.py",
        _REGRESSION + "test_quarantine.py"),
    "relay/domain/culprit.py": (  # test_culprit_push.py bisects real pushes: 1-2 minutes a test
        _REGRESSION + "test_culprit.py", _REGRESSION + "test_culprit_envs.py"),
    "relay/store/regression.py": (  # its e2e guard (tests/e2e/test_flaky_evidence.py): minutes a mutant
        _REGRESSION + "test_regression_store.py", _REGRESSION + "test_trunk_history.py",
        _REGRESSION + "test_culprit_envs.py", _REGRESSION + "test_quarantine.py"),
    "relay/crcr/allowlist.py": (
        "tests/crcr/test_allowlist_rules.py", "tests/crcr/test_allowlist_fixtures.py",
        "tests/service/test_allowlist.py"),
    "relay/crcr/verdict.py": ("tests/crcr/test_verdict.py",),
    "relay/crcr/tokens.py": (
        "tests/crcr/test_tokens_oidc.py", "tests/crcr/test_callback_protocol.py", "tests/crcr/test_oidc_nightly.py",
        "tests/service/test_callbacks.py"),
    "relay/crcr/oidc.py": (
        "tests/crcr/test_tokens_oidc.py", "tests/crcr/test_callback_protocol.py", "tests/crcr/test_oidc_nightly.py",
        "tests/service/test_callbacks.py"),
    "relay/github/signing.py": ("tests/service/test_settings_signing.py", "tests/service/test_webhook.py"),
    "selection/stages/classify.py": (
        _SELECTION + "test_classify.py", _SELECTION + "test_stages.py", _SELECTION + "test_heuristics.py",
        _SELECTION + "test_upgrade_budget.py"),
    "selection/stages/budget.py": (
        _SELECTION + "test_budget.py", _SELECTION + "test_upgrade_budget.py", _SELECTION + "test_stages.py"),
    "selection/stages/refine.py": (
        _SELECTION + "test_refine.py", _SELECTION + "test_stages.py", _SELECTION + "test_heuristics.py"),
    "selection/stages/scope.py": (
        _SELECTION + "test_scope.py", _SELECTION + "test_stages.py", _SELECTION + "test_modules.py",
        _SELECTION + "test_broad_native.py",
        _SELECTION + "test_upgrade_budget.py"),
    "selection/attribution/rules.py": (
        _SELECTION + "test_attribution_rules.py", _SELECTION + "test_source_map.py", _SELECTION + "test_modules.py",
        _SELECTION + "test_native.py",
        _SELECTION + "test_broad_native.py", _SELECTION + "test_module_graph.py"),
    "test_specs/format/precedence.py": (
        "tests/specs/test_precedence.py", "tests/specs/test_expand.py", "tests/specs/test_templates.py"),
    "spyre_backend/capabilities.py": (
        "tests/spyre_backend/test_capability_rules.py", "tests/spyre_backend/test_capabilities.py"),
}
#: How each mutant's process starts (mutmut ``process_isolation`` / ``forkserver_warmup``).  The
#: default forks mutmut's own process, which imported the module once, unmutated: code that runs
#: at import (pydantic types built by a factory, tables read into module constants) never runs
#: mutated there.  Modules listed here run each mutant in a fresh fork of a server that imported
#: nothing of ours (``none``), so the module is imported with the mutant in place; ``collect``
#: (imports done once in the server) only for torch's fork safety.
ISOLATION: dict[str, tuple[str, str]] = {
    "relay/crcr/verdict.py": ("forkserver", "none"),
    "spyre_backend/capabilities.py": ("forkserver", "collect"),
    "test_specs/format/precedence.py": ("forkserver", "collect"),
}
KILLED = {"killed", "timeout", "segfault"}
#: a mutant is stopped after this many times its tests' clean duration (+2 s; mutmut's default is 15):
#: a mutant that loops forever (``lo = mid`` in a bisection) is a kill, not a 30-minute wait
TIMEOUT_MULTIPLIER = 8
#: address-space cap of every mutant process: a loop that appends forever fails fast instead
#: of taking the shared machine's memory (torch maps ~3 GiB of address space on import)
MEMORY_CAP = 8 << 30


@dataclass
class Survivor:
    name: str
    function: str
    change: str
    reason: str | None = None  # set when listed as equivalent


@dataclass
class ModuleScore:
    module: str
    mutants: int = 0
    killed: int = 0
    timeouts: int = 0  # of the killed: the mutant's tests ran past the timeout (an endless loop)
    equivalent: int = 0
    seconds: float = 0.0
    survivors: list[Survivor] = field(default_factory=list)

    @property
    def survived(self) -> int:
        return self.mutants - self.killed - self.equivalent

    @property
    def score(self) -> float:
        scored = self.mutants - self.equivalent
        return self.killed / scored if scored else 1.0


def load_equivalents(path: Path = EQUIVALENT_FILE) -> dict[tuple[str, str, str], str]:
    """``module | function | change | reason`` per line (``#`` comments) → {(module, function, change): reason}."""
    found: dict[tuple[str, str, str], str] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1) if path.exists() else ():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        module, function, rest = (part.strip() for part in line.split(" | ", 2))
        change, sep, reason = rest.rpartition(" | ")
        if not sep or not reason.strip():
            raise SystemExit(f"{path}:{lineno}: an equivalent mutant needs a reason")
        found[(module, function, change.strip())] = reason.strip()
    return found


def _toml_list(values: list[str]) -> str:
    return json.dumps(values)  # a JSON array of strings is a TOML array


def prepare(module: str, tests: tuple[str, ...]) -> Path:
    """A fresh scratch directory for one module: links to the tree and its own mutmut config."""
    work = workdir(module)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in LINKED:
        if (ROOT / name).exists():
            (work / name).symlink_to(ROOT / name)
    pyproject = (ROOT / "pyproject.toml").read_text()
    isolation, warmup = ISOLATION.get(module, ("fork", "collect"))
    pyproject += (
        "\n[tool.mutmut]\n"
        f"source_paths = {_toml_list(list(PACKAGES))}\n"
        f"only_mutate = {_toml_list([module])}\n"
        f"also_copy = {_toml_list([n for n in LINKED if n not in PACKAGES and n != 'tests'])}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(list(tests))}\n"
        f"do_not_mutate_patterns = {_toml_list(DO_NOT_MUTATE)}\n"
        f'process_isolation = "{isolation}"\n'
        f'forkserver_warmup = "{warmup}"\n'
        "use_git_change_detection = false\n"
        f"timeout_multiplier = {TIMEOUT_MULTIPLIER}\n"
        # a fresh import (pytest collection, pydantic, our packages) is in no clean test's time
        f"timeout_constant = {15.0 if warmup == 'none' else 2.0}\n"
    )
    (work / "pyproject.toml").write_text(pyproject)
    return work


def _mutmut(work: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "RELAY_SHARED_FIXTURES": os.environ.get(
        "RELAY_SHARED_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))}
    out = log.open("w") if log else subprocess.PIPE
    try:
        return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=work, env=env, text=True,
                              stdout=out, stderr=subprocess.STDOUT, check=False, preexec_fn=_cap_memory)
    finally:
        if log:
            out.close()


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def function_of(name: str) -> str:
    """``relay.crcr.verdict.x__plain_url__mutmut_7`` → ``_plain_url``; methods ``Class.method``."""
    mangled = name.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[-1]
    if "ǁ" in mangled:  # xǁClassǁmethod
        return ".".join(mangled.split("ǁ")[1:])
    return mangled.removeprefix("x_")


def change_of(work: Path, name: str) -> str:
    """The mutant's changed lines, whitespace collapsed: ``old => new`` (several joined by ``;``)."""
    diff = _mutmut(work, "show", name).stdout.splitlines()
    old = [" ".join(line[1:].split()) for line in diff if line.startswith("-") and not line.startswith("---")]
    new = [" ".join(line[1:].split()) for line in diff if line.startswith("+") and not line.startswith("+++")]
    return f"{' ; '.join(old)} => {' ; '.join(new)}"


def score(module: str, work: Path, equivalents: dict[tuple[str, str, str], str]) -> ModuleScore:
    meta = work / "mutants" / f"{module}.meta"
    if not meta.exists():
        raise SystemExit(f"{module}: mutmut left no results ({work / 'mutmut.log'})")
    from mutmut.stats import status_by_exit_code

    result = ModuleScore(module)
    for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
        result.mutants += 1
        if status_by_exit_code[code] in KILLED:
            result.killed += 1
            result.timeouts += status_by_exit_code[code] == "timeout"
            continue
        survivor = Survivor(name, function_of(name), change_of(work, name))
        survivor.reason = equivalents.get((module, survivor.function, survivor.change))
        result.equivalent += survivor.reason is not None
        result.survivors.append(survivor)
    return result


def workdir(module: str) -> Path:
    return WORK / module.replace("/", ".").removesuffix(".py")


def run_module(module: str, jobs: int, equivalents: dict[tuple[str, str, str], str]) -> ModuleScore:
    tests = tuple(t for t in MODULES[module] if (ROOT / t).exists())  # an older tree may lack some
    if tests != MODULES[module]:
        print(f"  not in this tree: {', '.join(sorted(set(MODULES[module]) - set(tests)))}", file=sys.stderr)
    work = prepare(module, tests)
    t0 = time.perf_counter()
    proc = _mutmut(work, "run", "--max-children", str(jobs), log=work / "mutmut.log")
    if proc.returncode != 0:
        tail = (work / "mutmut.log").read_text()[-3000:]
        raise SystemExit(f"{module}: mutmut run failed (exit {proc.returncode}):\n{tail}")
    result = score(module, work, equivalents)
    result.seconds = time.perf_counter() - t0
    return result


def report(results: list[ModuleScore], equivalents: dict[tuple[str, str, str], str]) -> None:
    print(f"{'module':36} {'mutants':>7} {'killed':>6} {'(t/o)':>5} {'equiv':>5} {'survived':>8} {'score':>7} "
          f"{'s':>5}")
    for r in results:
        print(f"{r.module:36} {r.mutants:7} {r.killed:6} {r.timeouts:5} {r.equivalent:5} {r.survived:8} "
              f"{r.score:7.1%} {r.seconds:5.0f}")
    for r in results:
        for s in r.survivors:
            tag = f"equivalent: {s.reason}" if s.reason else "SURVIVED"
            print(f"{r.module} | {s.function} | {s.change} | {tag}  [{s.name}]")
    seen = {(r.module, s.function, s.change) for r in results for s in r.survivors}
    ran = {r.module for r in results}
    for key in equivalents:
        if key[0] in ran and key not in seen:
            print(f"stale equivalent entry (no such survivor now): {' | '.join(key)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=[], help="modules whose path contains one of these")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at a time (default 2)")
    parser.add_argument("--min-score", type=float, default=0.9)
    parser.add_argument("--json", type=Path, help="also write the scores and survivors here")
    parser.add_argument("--no-run", action="store_true",
                        help="report the results left in .mutation/ by the last run, run nothing")
    args = parser.parse_args(argv)
    modules = [m for m in MODULES if not args.only or any(s in m for s in args.only)]
    if not modules:
        raise SystemExit(f"no module matches {args.only}; known: {', '.join(MODULES)}")
    equivalents = load_equivalents()
    results = []
    for module in modules:
        print(f"… {module} ({len(MODULES[module])} test files)", file=sys.stderr, flush=True)
        results.append(score(module, workdir(module), equivalents) if args.no_run
                       else run_module(module, args.jobs, equivalents))
    report(results, equivalents)
    if args.json:
        args.json.write_text(json.dumps(
            [{**asdict(r), "survived": r.survived, "score": r.score} for r in results], indent=1))
    return 0 if all(r.score >= args.min_score for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
