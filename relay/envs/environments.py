"""Execution environments: which torch a run's tests execute against.

An environment is named by a string (CLI ``--head-env`` / ``--base-env``):

* ``current`` — this interpreter and its installed torch;
* a requirement such as ``torch==2.14.1`` — a virtual environment built from it (pip, so the
  machine's wheel cache and indexes apply);
* a wheel path (``.../torch-2.14.1-...whl``) or URL (a nightly or PR build) — a virtual
  environment with that wheel;
* any of these followed by ``+faults=<SPYRE_SIM_FAULTS value>`` — the same environment with a
  simulated regression injected into the device (``spyre_backend.faults``) for this run only.

Built environments are cached under ``<state dir>/envs/<key>`` and reused; every run records
the torch it ran against (version, git version, wheel sha256).  Providers are pluggable: the
``PROVIDERS`` list is tried in order and the first that ``accepts`` the spec builds it.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from relay.envs.download import Progress, run_pip_download
from relay.errors import EnvironmentError_

FAULTS_MARK = "+faults="
#: one build at a time per environment in this process (the in-process pool runs deliveries on
#: several threads; two builds of one virtual environment would clear each other's files)
_BUILD_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


@dataclass(frozen=True)
class EnvSpec:
    """A parsed environment name: ``base`` (current / requirement / wheel / URL) + ``faults``."""

    base: str
    faults: str | None = None

    @classmethod
    def parse(cls, text: str) -> EnvSpec:
        """Parse ``current``, ``torch==X``, a wheel path or URL, optionally ``+faults=...``.

        Raises ``EnvironmentError_`` for an empty base or an empty faults value.
        """
        base, mark, faults = text.partition(FAULTS_MARK)
        base = base.strip() or ""
        if not base:
            raise EnvironmentError_(f"environment {text!r}: nothing before {FAULTS_MARK!r}")
        if mark and not faults.strip():
            raise EnvironmentError_(f"environment {text!r}: empty {FAULTS_MARK} value")
        return cls(base=base, faults=faults.strip() or None)

    def __str__(self) -> str:
        return self.base + (FAULTS_MARK + self.faults if self.faults else "")


@dataclass(frozen=True)
class Environment:
    """A ready environment: the interpreter to run tests with and the variables to add.

    ``torch`` records what the run executed against: ``version``, ``git_version`` and
    ``wheel_sha256`` (``None`` when torch was not installed from a wheel file we saw).
    """

    name: str
    python: Path
    env: dict[str, str] = field(default_factory=dict)
    torch: dict[str, str | None] = field(default_factory=dict)


_VERSION_RE = re.compile(r"^(__version__|git_version)\s*(?::\s*str)?\s*=\s*['\"]([^'\"]*)['\"]", re.M)


def torch_info(site_packages: Path) -> dict[str, str | None]:
    """Version and git version of the torch in ``site_packages`` (read from torch/version.py,
    without importing torch)."""
    path = site_packages / "torch" / "version.py"
    try:
        found = dict(_VERSION_RE.findall(path.read_text()))
    except OSError:
        raise EnvironmentError_(f"no torch installed in {site_packages}") from None
    return {"version": found.get("__version__"), "git_version": found.get("git_version")}


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


class Provider(Protocol):
    """Builds environments of one kind.  ``accepts`` is cheap; ``build`` may take minutes."""

    def accepts(self, spec: EnvSpec) -> bool: ...

    def build(self, spec: EnvSpec, state_dir: Path) -> Environment: ...


#: the environment name of the relay's own interpreter and its installed torch
CURRENT = "current"


class CurrentProvider:
    """``current``: this interpreter and its torch."""

    def accepts(self, spec: EnvSpec) -> bool:
        return spec.base == CURRENT

    def build(self, spec: EnvSpec, state_dir: Path) -> Environment:
        import importlib.util

        torch_dir = Path(importlib.util.find_spec("torch").origin).parent  # type: ignore[union-attr]
        info = torch_info(torch_dir.parent) | {"wheel_sha256": None}
        return Environment(name=str(spec), python=Path(sys.executable), torch=info)


def project_root() -> Path:
    """The source checkout this project runs from (a venv gets it installed with --no-deps).

    Raises ``EnvironmentError_`` when the project is not installed from a checkout.
    """
    root = Path(__file__).resolve().parents[2]  # relay/envs/environments.py → the checkout
    if not (root / "pyproject.toml").exists():
        raise EnvironmentError_("building environments needs spyre-relay installed from a source "
                                "checkout (pip install -e .)")
    return root


TEST_DEPS = ("numpy", "expecttest", "pytest", "pytest-timeout", "pytest-rerunfailures",
             "pytest-xdist", "pytest-reportlog", "pyyaml", "pydantic")


class VenvProvider:
    """A requirement (``torch==X``), a wheel file or a wheel URL → a cached virtual environment.

    The torch wheel is first materialised (``pip download --no-deps``, or the given file) so its
    sha256 can be recorded; then torch, the test dependencies and this project (``--no-deps``)
    are installed.  A finished environment has a ``relay-env.json`` marker; a half-built one
    (killed build) lacks it and is rebuilt; one built with fewer ``TEST_DEPS`` than today's has
    the missing ones installed on first use.
    """

    def accepts(self, spec: EnvSpec) -> bool:
        b = spec.base
        return b.startswith("torch") or b.endswith(".whl") or b.startswith(("http://", "https://"))

    def build(self, spec: EnvSpec, state_dir: Path) -> Environment:
        key = hashlib.sha256(spec.base.encode()).hexdigest()[:16]
        root = (state_dir / "envs" / key).resolve()
        marker = root / "relay-env.json"
        python = root / "bin" / "python"
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        if marker.exists():
            info = json.loads(marker.read_text())
            if info.get("test_deps") != list(TEST_DEPS):  # built before a test dependency was added
                self._run(pip + list(TEST_DEPS), spec)
                marker.write_text(json.dumps({**info, "test_deps": list(TEST_DEPS)}))
            return Environment(name=str(spec), python=python, torch=info["torch"])
        venv.EnvBuilder(with_pip=True, clear=True).create(root)
        wheel = self._wheel(spec.base, root, python)
        self._run(pip + [str(wheel), *TEST_DEPS], spec)
        self._run(pip + ["--no-deps", "--no-build-isolation", "-e", str(project_root())], spec)
        site = _site_packages(python)
        info = torch_info(site) | {"wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
        marker.write_text(json.dumps({"spec": spec.base, "torch": info, "test_deps": list(TEST_DEPS)}))
        return Environment(name=str(spec), python=python, torch=info)

    def _wheel(self, base: str, root: Path, python: Path) -> Path:
        return fetch_wheel(base, root / "wheels", python=python)

    @staticmethod
    def _run(cmd: list[str], spec: EnvSpec) -> None:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            raise EnvironmentError_(f"building environment {spec.base!r} failed: " + " | ".join(tail))


def fetch_wheel(requirement: str, dest: Path, *, python: Path | None = None,
                progress: Progress | None = None) -> Path:
    """The torch wheel for ``requirement`` (``torch==X``, a wheel URL, or a local wheel path),
    downloaded with ``pip download --no-deps`` into ``dest`` unless already there; with
    ``progress``, the download reports its bytes as it goes (``relay.envs.download``).

    Raises ``EnvironmentError_`` when the wheel cannot be had.
    """
    if requirement.endswith(".whl") and not requirement.startswith(("http://", "https://")):
        path = Path(requirement).expanduser().resolve()
        if not path.exists():
            raise EnvironmentError_(f"{requirement}: no such wheel file")
        return path
    dest = Path(dest)
    marker = dest / (hashlib.sha256(requirement.encode()).hexdigest()[:16] + ".txt")
    if marker.exists() and (dest / marker.read_text().strip()).exists():
        return dest / marker.read_text().strip()
    before = set(dest.glob("torch-*.whl")) if dest.exists() else set()
    cmd = [str(python or sys.executable), "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "-d", str(dest), requirement]
    if progress is None:
        VenvProvider._run([*cmd, "-q"], EnvSpec(requirement))
    else:
        code, output = run_pip_download(cmd, progress)
        if code != 0:
            tail = output.strip().splitlines()[-5:]
            raise EnvironmentError_(f"building environment {requirement!r} failed: " + " | ".join(tail))
    wheels = sorted(set(dest.glob("torch-*.whl")) - before) or sorted(dest.glob("torch-*.whl"))
    if not wheels:
        raise EnvironmentError_(f"{requirement}: pip download produced no torch wheel")
    marker.write_text(wheels[-1].name)
    return wheels[-1]


PROVIDERS: list[Provider] = [CurrentProvider(), VenvProvider()]


def validate(text: str, providers: list[Provider] | None = None, *, files: bool = True) -> EnvSpec:
    """Parse ``text`` and check its faults and kind without building anything (cheap; the CLI
    calls it before minutes of work).  ``files=False`` skips the check that a local wheel exists
    (a per-commit template names wheels of commits not built yet).  Raises ``EnvironmentError_``."""
    spec = EnvSpec.parse(text)
    if spec.faults:
        from spyre_backend.faults import parse_faults

        try:
            parse_faults(spec.faults)
        except ValueError as exc:
            raise EnvironmentError_(f"environment {text!r}: {exc}") from None
    if not any(p.accepts(spec) for p in providers or PROVIDERS):
        raise EnvironmentError_(f"environment {text!r} is not 'current', a torch requirement, a wheel or a URL")
    if files and spec.base.endswith(".whl") and not spec.base.startswith(("http://", "https://")) \
            and not Path(spec.base).expanduser().exists():
        raise EnvironmentError_(f"{spec.base}: no such wheel file")
    return spec


def prepare(text: str, state_dir: Path, providers: list[Provider] | None = None) -> Environment:
    """Parse ``text`` and build (or reuse) its environment; faults become ``SPYRE_SIM_FAULTS``.
    Thread-safe: concurrent calls for one environment build it once, the others reuse it.

    Raises ``EnvironmentError_`` for an unknown kind, a failed build or malformed faults.
    """
    spec = validate(text, providers)
    with _LOCKS_LOCK:
        lock = _BUILD_LOCKS.setdefault(spec.base, threading.Lock())
    for provider in providers or PROVIDERS:
        if provider.accepts(spec):
            with lock:
                env = provider.build(spec, state_dir)
            extra = dict(env.env)
            if spec.faults:
                extra["SPYRE_SIM_FAULTS"] = spec.faults
            return Environment(name=str(spec), python=env.python, env=extra, torch=env.torch)
    raise EnvironmentError_(f"environment {text!r} is not 'current', a torch requirement, a wheel or a URL")


def describe(env: Environment) -> dict[str, object]:
    """What a run records about its environment (JSON-ready)."""
    return {"name": env.name, "python": str(env.python), "faults": env.env.get("SPYRE_SIM_FAULTS"),
            **{f"torch_{k}": v for k, v in env.torch.items()}}
