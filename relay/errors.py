"""Every exception the relay raises on purpose, in one tree (httpx's ``_exceptions.py`` habit).

Catch ``RelayError`` for "anything of ours".  Classes that describe bad input also derive from
``ValueError``, failures of work from ``RuntimeError``, so generic handlers keep working::

    RelayError
    ├── ConfigError                  settings unusable for the requested role (e.g. serve
    │   │                            without a webhook secret)
    │   ├── AllowlistError           CRCR allowlist YAML invalid; ``errors`` lists every problem
    │   ├── CiProvidersError         CRCR ci_providers.yml (OIDC pipeline → repo map) unreadable
    │   └── CommitEnvError           RELAY_COMMIT_ENV malformed, or a commit's environment unknown
    ├── InputError                   a user-supplied change (file, diff, PR files) is unreadable
    │   ├── ChangeSourceError        a wheel / tree / git revision to diff is not usable
    │   ├── GitRangeError            a commit range cannot be read from the checkout
    │   ├── SymbolError              Python source that cannot be parsed for symbols
    │   └── SpecsInvalid             specs that do not load; one ``file:line:col: ...`` per line
    ├── EnvironmentError_            an execution environment cannot be parsed or built
    ├── ExecutionError               running tests did not complete
    │   ├── ExecutionFailed          a distributed execution (Celery chord) failed or timed out
    │   ├── MissingResults           an execution finished with test ids lacking a result
    │   ├── SpecRefError             a spec reference sent to a worker cannot be resolved
    │   └── BisectionError           a culprit-finding round could not run; names the commit
    ├── SignatureError               webhook ``X-Hub-Signature-256`` rejected; ``status_code``
    │   ├── SignatureHeaderError     header missing or malformed
    │   │   ├── SignatureMissing     400
    │   │   └── SignatureMalformed   401 (CRCR: like any mismatch)
    │   └── SignatureMismatch        401: well-formed but the HMAC does not match
    ├── BodyRefused                  an HTTP request body refused while reading it; ``status``
    ├── StoreError                   persistence problems
    │   ├── RunNotFound              ``load_run`` for an unknown id
    │   └── DatabaseFileGone         the SQLite file was deleted under a running process
    ├── GitHubError                  GitHub REST problems
    │   └── GitHubAPIError           non-2xx answer after retries; ``status_code``, ``url``
    │       └── HookNotFound         404 for a repository webhook (or no admin rights on it)
    ├── TrimError                    a repository_dispatch payload over GitHub's cap even trimmed
    ├── PayloadInvalid               a stored delivery's payload the relay cannot act on (too
    │                                deep, or the wrong shape for its event): a permanent failure
    ├── CallbackError                ``POST /api/crcr/callback`` refused; ``status_code``
    │   ├── CallbackAuthError        401: bearer token missing, invalid, expired or replayed
    │   ├── CallbackForbidden        403: valid token, but not for this delivery/repo, or a CI
    │   │                            pipeline not registered / a required claim not allowed
    │   ├── CallbackRateLimited      429: over 100 callbacks/min for the repo; ``retry_after``
    │   ├── CallbackInvalid          400: a required field missing, an unknown status, a
    │   │                            nightly not ``completed`` or naming an unknown commit
    │   ├── CallbackUnknown          400: no dispatch of this delivery to this repo (CRCR)
    │   └── CallbackTransitionError  400: duplicate or skipped state (CRCR state machine)
    └── HudError                     dashboard (HUD) reporting problems
        ├── HudBodyTooLarge          body over the 2 MB CRCR cap
        └── HudPostError             non-2xx answer after retries; ``status_code``

Status codes follow GitHub's webhook guidance (a bad/missing signature must be rejected before
the payload is parsed) and design §5 (400 missing/malformed, 401 wrong).
"""

from __future__ import annotations

__all__ = [
    "RelayError",
    "ConfigError",
    "CommitEnvError",
    "InputError",
    "ChangeSourceError",
    "GitRangeError",
    "SymbolError",
    "SpecsInvalid",
    "EnvironmentError_",
    "ExecutionError",
    "ExecutionFailed",
    "MissingResults",
    "SpecRefError",
    "BisectionError",
    "BodyRefused",
    "DatabaseFileGone",
    "HookNotFound",
    "TrimError",
    "PayloadInvalid",
    "SignatureError",
    "SignatureHeaderError",
    "SignatureMissing",
    "SignatureMalformed",
    "SignatureMismatch",
    "StoreError",
    "RunNotFound",
    "GitHubError",
    "GitHubAPIError",
    "AllowlistError",
    "CiProvidersError",
    "CallbackError",
    "CallbackAuthError",
    "CallbackForbidden",
    "CallbackRateLimited",
    "CallbackInvalid",
    "CallbackUnknown",
    "CallbackTransitionError",
    "HudError",
    "HudBodyTooLarge",
    "HudPostError",
]


class RelayError(Exception):
    """Base class of every exception the relay raises on purpose."""


class ConfigError(RelayError):
    """Settings are missing or unusable for the requested role."""


class CommitEnvError(ConfigError, ValueError):
    """``RELAY_COMMIT_ENV`` is malformed, or a commit's environment cannot be resolved; the
    message names the setting or the commit and why."""


class InputError(RelayError, ValueError):
    """A user-supplied change could not be read; the message says where and why."""


class ChangeSourceError(InputError):
    """A source path that does not exist, is not a wheel/directory/git revision, or is unreadable."""


class GitRangeError(InputError):
    """The range could not be read from the checkout; the message says which part and why."""


class SymbolError(InputError):
    """The Python source could not be parsed (syntax error, null bytes, too deeply nested)."""


class SpecsInvalid(InputError):
    """The specs could not be loaded or expanded; the message has one ``file:line:col: ...``
    line per error."""


class EnvironmentError_(RelayError, RuntimeError):
    """An environment could not be parsed or built; the message says which and why."""


class ExecutionError(RelayError, RuntimeError):
    """Running a run's tests did not complete."""


class ExecutionFailed(ExecutionError):
    """The distributed execution of a run's items did not complete."""


class MissingResults(ExecutionError):
    """An execution finished but some of its test ids have no recorded result."""


class SpecRefError(ExecutionError, ValueError):
    """A spec reference cannot be resolved (unknown packaged name, missing file, bad shape)."""


class BisectionError(ExecutionError):
    """A round could not run (the commit's environment could not be resolved or built); the
    message names the commit."""


class BodyRefused(RelayError):
    """A request refused while reading it: ``status`` (400/413/503) and a ``detail`` reason."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class TrimError(RelayError, ValueError):
    """A repository_dispatch payload is over GitHub's cap even after trimming."""


class PayloadInvalid(RelayError, ValueError):
    """A stored delivery's payload cannot be acted on (nested over ``MAX_DEPTH``, not a JSON
    object, or not the shape GitHub sends for its event): the delivery ends ``failed`` with this
    text and is never retried."""


class SignatureError(RelayError):
    """A webhook signature was rejected; ``status_code`` is the HTTP answer to give."""

    status_code = 400


class SignatureHeaderError(SignatureError):
    """``X-Hub-Signature-256`` is missing (HTTP 400) or not ``sha256=<64 hex digits>`` (401)."""

    status_code = 400


class SignatureMissing(SignatureHeaderError):
    """No ``X-Hub-Signature-256`` header (HTTP 400)."""


class SignatureMalformed(SignatureHeaderError):
    """The header is present but not of the form ``sha256=<64 hex>`` (HTTP 401, as CRCR answers
    any signature that does not verify; only a missing header is a 400)."""

    status_code = 401


class SignatureMismatch(SignatureError):
    """The header is well-formed but the HMAC-SHA256 of the body differs (HTTP 401)."""

    status_code = 401


class AllowlistError(ConfigError):
    """The CRCR allowlist is invalid; ``errors`` holds one message per problem found."""

    def __init__(self, source: str, errors: list[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(errors))
        self.source = source
        self.errors = list(errors)


class CiProvidersError(ConfigError):
    """The CI-provider map (CRCR ``ci_providers.yml``) cannot be read or is not a mapping;
    ``errors`` holds one message per problem."""

    def __init__(self, source: str, errors: list[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(errors))
        self.source = source
        self.errors = list(errors)


class CallbackError(RelayError):
    """A downstream callback was refused; ``status_code`` is the HTTP answer."""

    status_code = 400


class CallbackAuthError(CallbackError):
    """Bearer token missing, malformed, badly signed, expired or already used (HTTP 401)."""

    status_code = 401


class CallbackForbidden(CallbackError):
    """The token is valid but was not issued for this delivery or repo, or its CI pipeline is
    not registered / a claim it must carry has another value (HTTP 403)."""

    status_code = 403


class CallbackRateLimited(CallbackError):
    """More than the per-repo limit of callbacks in the window (HTTP 429); ``retry_after`` s."""

    status_code = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CallbackInvalid(CallbackError):
    """The callback body is unusable: a required field missing, an unknown status, a nightly
    callback not ``completed`` or naming a commit the upstream does not have (HTTP 400)."""

    status_code = 400


class CallbackUnknown(CallbackError):
    """No dispatch of the delivery to the calling repo is recorded (HTTP 400, as CRCR)."""

    status_code = 400


class CallbackTransitionError(CallbackError):
    """The callback repeats a state or skips one (CRCR: DISPATCHED → IN_PROGRESS → COMPLETED;
    HTTP 400)."""

    status_code = 400


class StoreError(RelayError):
    """A persistence operation failed."""


class RunNotFound(StoreError, KeyError):
    """No run with the requested id is stored."""


class DatabaseFileGone(StoreError, RuntimeError):
    """The SQLite file this process opened was deleted (or moved) under it: SQLite would go on
    writing into the unlinked inode, and everything written would vanish at restart."""


class GitHubError(RelayError):
    """A GitHub REST call failed."""


class GitHubAPIError(GitHubError):
    """GitHub answered with a non-2xx status (after retries for 5xx/429); ``status_code`` 0
    means no answer at all (connection refused, DNS, timeout)."""

    def __init__(self, status_code: int, url: str, message: str = "") -> None:
        what = f"GitHub API {status_code}" if status_code else "GitHub API unreachable"
        super().__init__(f"{what} for {url}: {message[:200]}")
        self.status_code = status_code
        self.url = url

    @property
    def transient(self) -> bool:
        """Worth another attempt later: no answer (0), 429, or a 5xx (GitHub's guidance for
        secondary rate limits and outages); any other status will not change by waiting."""
        return self.status_code in (0, 429) or self.status_code >= 500


class HookNotFound(GitHubAPIError):
    """GitHub answered 404 for the hook: no such hook on the repository, or the token lacks
    admin rights on it (GitHub hides hooks from non-admins).  ``status_code`` is 404."""

    def __init__(self, repo: str, hook_id: int, url: str) -> None:
        super().__init__(404, url, "")
        self.args = (f"webhook {hook_id} of {repo} not found on GitHub (404): check the hook id, "
                     "and that the token has admin rights on the repository",)
        self.repo = repo
        self.hook_id = hook_id


class HudError(RelayError):
    """Reporting results to the dashboard failed."""


class HudBodyTooLarge(HudError):
    """The serialized HUD body exceeds the 2 MB cap of CRCR's results endpoint."""


class HudPostError(HudError):
    """The dashboard answered with a non-2xx status (after retries for 5xx)."""

    def __init__(self, status_code: int, url: str, message: str = "") -> None:
        super().__init__(f"dashboard {status_code} for {url}: {message[:200]}")
        self.status_code = status_code
        self.url = url
