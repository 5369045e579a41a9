"""Commit → environment: which environment an upstream commit's tests run in.

A *resolver* maps an upstream commit sha to an environment name that
``relay.envs.environments.prepare`` accepts (``current``, ``torch==X``, a wheel path or URL, optionally
``+faults=<SPYRE_SIM_FAULTS>``).  Push and pull-request processing use it to pick the head and
base environments of a regression run, and culprit finding (``relay.pipeline.bisection``) to pick the
environment of every commit it tries.  Configured by ``RELAY_COMMIT_ENV``
(``Settings.commit_env``); unset = no environments (plain runs in this interpreter).

Kinds (``parse_commit_env``):

* ``git-faults:<checkout>[#<file>]`` — ``GitFaultsResolver``: the simulated-regression
  resolver.  Reads ``<file>`` (default ``.spyre-sim-faults``) from a local git checkout of the
  upstream at the commit (``git ls-tree`` / ``git cat-file``, never touching the work tree):
  absent → ``current``; present → ``current+faults=<contents>`` (lines joined by ``,``;
  blank lines and ``#`` comments ignored).
* any text containing ``{sha}`` — ``TemplateResolver``: ``{sha}`` is replaced by the full
  commit sha, e.g. ``https://wheels.example.org/torch-{sha}/torch-2.14.0-cp312-linux_x86_64.whl``
  (a per-commit wheel a team publishes) or ``torch==2.14.0.dev0+git{sha}``.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from relay.changes.git import git_run
from relay.envs.environments import validate
from relay.errors import CommitEnvError, EnvironmentError_

__all__ = ["CommitEnvError", "CommitEnvResolver", "GitFaultsResolver", "TemplateResolver",
           "parse_commit_env", "resolver_for", "GIT_FAULTS", "FAULTS_FILE", "SHA_MARK"]

GIT_FAULTS = "git-faults:"
FAULTS_FILE = ".spyre-sim-faults"
SHA_MARK = "{sha}"
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")


class CommitEnvResolver(Protocol):
    """Maps an upstream commit sha (hex, 7–64 characters) to an environment name."""

    description: str

    def resolve(self, sha: str) -> str: ...


def _check_sha(sha: str) -> str:
    if not _SHA.match(sha or ""):
        raise CommitEnvError(f"commit {sha!r}: not a hex commit sha")
    return sha


def _check_env_kind(text: str, origin: str) -> None:
    """``text`` must be an environment name of a known kind with valid faults (no build, no
    file-existence check: a templated wheel path may exist only for real commits)."""
    try:
        validate(text, files=False)
    except EnvironmentError_ as exc:
        raise CommitEnvError(f"{origin}: {exc}") from None


@dataclass(frozen=True)
class TemplateResolver:
    """``template`` with ``{sha}`` replaced by the commit sha (plain replacement: other braces in
    a URL stay as they are)."""

    template: str

    @property
    def description(self) -> str:
        return f"template {self.template}"

    def resolve(self, sha: str) -> str:
        """The environment name for ``sha``; raises ``CommitEnvError`` for a non-hex sha."""
        return self.template.replace(SHA_MARK, _check_sha(sha))


@dataclass(frozen=True)
class GitFaultsResolver:
    """Simulated regressions committed to the upstream: ``<file>`` at the commit in ``checkout``.

    ``base`` is the environment every commit runs in (default ``current``); the file's contents,
    when present, become its ``+faults=`` part.
    """

    checkout: Path
    path: str = FAULTS_FILE
    base: str = "current"

    @property
    def description(self) -> str:
        return f"{GIT_FAULTS}{self.checkout}#{self.path}"

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return git_run(self.checkout, *args, error=CommitEnvError, label=self.description)

    def faults_at(self, sha: str) -> str | None:
        """The faults the file holds at ``sha`` (``None`` when the commit has no such file).

        Raises ``CommitEnvError`` when the commit is not in the checkout.
        """
        _check_sha(sha)
        found = self._git("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
        if found.returncode != 0:
            raise CommitEnvError(f"commit {sha}: not found in {self.checkout} (fetch it first)")
        commit = found.stdout.strip()
        listed = self._git("ls-tree", "--full-tree", commit, "--", self.path)
        if listed.returncode != 0 or not listed.stdout.strip():
            return None
        kind = listed.stdout.split()[1]  # "<mode> <type> <object>\t<path>"
        if kind != "blob":
            raise CommitEnvError(f"commit {sha}: {self.path} is a {kind}, not a file")
        shown = self._git("cat-file", "-p", f"{commit}:{self.path}")
        if shown.returncode != 0:
            raise CommitEnvError(f"commit {sha}: cannot read {self.path}: {shown.stderr.strip()}")
        entries = [line.strip() for line in shown.stdout.splitlines()]
        return ",".join(e for e in entries if e and not e.startswith("#")) or None

    def resolve(self, sha: str) -> str:
        """``base`` or ``base+faults=<contents>``; raises ``CommitEnvError`` for an unknown commit
        or a file whose contents are not a valid ``SPYRE_SIM_FAULTS`` value."""
        faults = self.faults_at(sha)
        if faults is None:
            return self.base
        name = f"{self.base}+faults={faults}"
        _check_env_kind(name, f"commit {sha}: {self.path}")
        return name


def parse_commit_env(text: str) -> CommitEnvResolver:
    """The resolver ``text`` (``RELAY_COMMIT_ENV``) names; see the module docstring.

    Cheap checks only (no git call): a ``git-faults:`` checkout must be an existing directory
    with a ``.git`` entry; a template must contain ``{sha}`` and, filled with a dummy sha, be an
    environment name of a known kind.  Raises ``CommitEnvError`` with the reason.
    """
    text = (text or "").strip()
    if text.startswith(GIT_FAULTS):
        where, _, file = text[len(GIT_FAULTS):].partition("#")
        if not where.strip():
            raise CommitEnvError(f"RELAY_COMMIT_ENV={text!r}: no checkout path after {GIT_FAULTS!r}")
        checkout = Path(where.strip()).expanduser()
        if not checkout.is_dir() or not (checkout / ".git").exists():
            raise CommitEnvError(f"RELAY_COMMIT_ENV={text!r}: {checkout} is not a git checkout")
        return GitFaultsResolver(checkout=checkout.resolve(), path=file.strip() or FAULTS_FILE)
    if SHA_MARK in text:
        _check_env_kind(text.replace(SHA_MARK, "0" * 40), f"RELAY_COMMIT_ENV={text!r}")
        return TemplateResolver(text)
    raise CommitEnvError(f"RELAY_COMMIT_ENV={text!r}: expected '{GIT_FAULTS}<upstream checkout>' "
                         f"or an environment template containing {SHA_MARK!r} (a wheel URL or "
                         "requirement per commit)")


def resolver_for(text: str | None) -> CommitEnvResolver | None:
    """The resolver ``RELAY_COMMIT_ENV`` (``text``) names, or ``None`` when it is unset or blank;
    raises ``CommitEnvError`` like ``parse_commit_env``."""
    return parse_commit_env(text) if text and text.strip() else None
