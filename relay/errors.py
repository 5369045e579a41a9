"""Exceptions raised by the relay service layers (settings, webhooks, store, GitHub, HUD).

Hierarchy (every class is importable from here; catch ``RelayError`` for "anything of ours")::

    RelayError
    ├── ConfigError                  settings unusable for the requested role (e.g. serve
    │   │                            without a webhook secret)
    │   └── AllowlistError           CRCR allowlist YAML invalid; ``errors`` lists every problem
    ├── SignatureError               webhook ``X-Hub-Signature-256`` rejected; ``status_code``
    │   ├── SignatureHeaderError     400: header missing or malformed
    │   │   ├── SignatureMissing
    │   │   └── SignatureMalformed
    │   └── SignatureMismatch        401: well-formed but the HMAC does not match
    ├── StoreError                   persistence problems
    │   └── RunNotFound              ``load_run`` for an unknown id
    ├── GitHubError                  GitHub REST problems
    │   └── GitHubAPIError           non-2xx answer after retries; ``status_code``, ``url``
    ├── CallbackError                ``POST /api/crcr/callback`` refused; ``status_code``
    │   ├── CallbackAuthError        401: bearer token missing, invalid, expired or replayed
    │   ├── CallbackForbidden        403: valid token, but not for this delivery/repo
    │   ├── CallbackRateLimited      429: over 100 callbacks/min for the repo; ``retry_after``
    │   ├── CallbackUnknown          404: no dispatch of this delivery to this repo
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
    "CallbackError",
    "CallbackAuthError",
    "CallbackForbidden",
    "CallbackRateLimited",
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


class SignatureError(RelayError):
    """A webhook signature was rejected; ``status_code`` is the HTTP answer to give."""

    status_code = 400


class SignatureHeaderError(SignatureError):
    """``X-Hub-Signature-256`` is missing or not ``sha256=<64 hex digits>`` (HTTP 400)."""

    status_code = 400


class SignatureMissing(SignatureHeaderError):
    """No ``X-Hub-Signature-256`` header (HTTP 400)."""


class SignatureMalformed(SignatureHeaderError):
    """The header is present but not of the form ``sha256=<hex>`` (HTTP 400)."""


class SignatureMismatch(SignatureError):
    """The header is well-formed but the HMAC-SHA256 of the body differs (HTTP 401)."""

    status_code = 401


class AllowlistError(ConfigError):
    """The CRCR allowlist is invalid; ``errors`` holds one message per problem found."""

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
    """The token is valid but was not issued for this delivery or repo (HTTP 403)."""

    status_code = 403


class CallbackRateLimited(CallbackError):
    """More than the per-repo limit of callbacks in the window (HTTP 429); ``retry_after`` s."""

    status_code = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CallbackUnknown(CallbackError):
    """No dispatch of the delivery to the calling repo is recorded (HTTP 404)."""

    status_code = 404


class CallbackTransitionError(CallbackError):
    """The callback repeats a state or skips one (CRCR: DISPATCHED → IN_PROGRESS → COMPLETED;
    HTTP 400)."""

    status_code = 400


class StoreError(RelayError):
    """A persistence operation failed."""


class RunNotFound(StoreError, KeyError):
    """No run with the requested id is stored."""


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
