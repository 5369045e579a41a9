"""CI providers whose OIDC tokens have no ``repository`` claim: a map of pipeline → repo.

Format (CRCR ``config/ci_providers.yml``; ``utils/jwt_helper.py`` ``load_ci_provider_mappings``)::

    providers:
      buildkite:
        repo_map:
          <organization_id>/<pipeline_id>: owner/repo             # simple form
          <organization_id>/<pipeline_id>:                        # constrained form
            repo: owner/repo
            required_claims: {build_branch: [main]}              # claim -> allowed values
    buildkite: {...}   # legacy flat section, read only when providers.buildkite.repo_map is empty

Keys are Buildkite's immutable ``organization_id``/``pipeline_id`` UUIDs (slugs can be renamed
and re-claimed).  A scalar allowed value becomes a one-element list.  An entry whose key or repo
lacks a ``/``, or whose value is neither a string nor such a mapping, is skipped with a warning
(CRCR); other providers' sections are ignored.  Only this *mutable* authorization data comes from
the file: issuers and JWKS URLs are settings (``relay.crcr.oidc``), never read from it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from relay.crcr.yamlsource import YamlSource, load_yaml_text
from relay.errors import CiProvidersError

__all__ = ["PipelineRepo", "ProviderMap", "parse_ci_providers", "CiProvidersSource"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineRepo:
    """What one registered pipeline may report as: ``repo``, if every claim named in
    ``required_claims`` has one of its allowed values."""

    repo: str
    required_claims: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderMap:
    """``buildkite``: ``"<organization_id>/<pipeline_id>"`` → ``PipelineRepo``."""

    buildkite: dict[str, PipelineRepo] = field(default_factory=dict)


def _entry(key: Any, value: Any, source: str) -> PipelineRepo | None:
    repo, claims = (value, {}) if isinstance(value, str) else (
        (value.get("repo"), value.get("required_claims") or {}) if isinstance(value, dict) else (None, {}))
    problem = None
    if "/" not in str(key):
        problem = "key is not <organization_id>/<pipeline_id>"
    elif not isinstance(repo, str) or "/" not in repo:
        problem = "repo is not owner/repo"
    elif not isinstance(claims, dict):
        problem = "required_claims is not a mapping"
    if problem is not None:
        log.warning("ci providers %s: skipping entry %r: %s", source, key, problem)
        return None
    allowed = {str(k): tuple(str(x) for x in (v if isinstance(v, list) else [v]))
               for k, v in claims.items()}
    return PipelineRepo(repo.strip(), allowed)


def parse_ci_providers(data: Any, source: str = "<ci_providers>") -> ProviderMap:
    """The ``ProviderMap`` of loaded YAML ``data``; raises ``CiProvidersError`` when the top
    level is not a mapping (bad entries are skipped, see the module docstring)."""
    if data is None:
        return ProviderMap()
    if not isinstance(data, dict):
        raise CiProvidersError(source, [f"expected a mapping, got {type(data).__name__}"])
    providers = data.get("providers") if isinstance(data.get("providers"), dict) else {}
    section = providers.get("buildkite") if isinstance(providers.get("buildkite"), dict) else {}
    repo_map = section.get("repo_map") if isinstance(section.get("repo_map"), dict) else {}
    if not repo_map and isinstance(data.get("buildkite"), dict):
        repo_map = data["buildkite"]
    found = {str(k).strip(): _entry(k, v, source) for k, v in repo_map.items()}
    return ProviderMap({k: v for k, v in found.items() if v is not None})


def _parse_text(text: str, source: str) -> ProviderMap:
    return parse_ci_providers(load_yaml_text(text, source, CiProvidersError), source)


class CiProvidersSource(YamlSource[ProviderMap]):
    """The current ``ProviderMap`` of a file path or URL (``RELAY_CI_PROVIDERS``), reloaded when
    it changes; raises ``CiProvidersError`` when the first load fails."""

    def __init__(self, location: str, *, refresh_s: float = 5.0) -> None:
        super().__init__(location, _parse_text, error=CiProvidersError, refresh_s=refresh_s)
