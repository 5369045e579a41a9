"""Relay configuration from the environment (pydantic-settings, prefix ``RELAY_``; design §5).

Variables: ``RELAY_WEBHOOK_SECRET``, ``RELAY_DATABASE_URL`` (default
``sqlite:///<RELAY_STATE_DIR or ./.relay>/relay.db``), ``RELAY_BROKER_URL`` (unset = work runs
in-process), ``RELAY_GITHUB_API_URL``, ``RELAY_GITHUB_TOKEN``, ``RELAY_DASHBOARD_URL`` (unset =
this relay, in-process), ``RELAY_ALLOWLIST`` (path of a CRCR allowlist YAML),
``RELAY_UPSTREAM_REPO``, ``RELAY_BACKEND``, ``RELAY_WORKERS`` (threads working deliveries
in-process, default 2: one long run no longer holds every other delivery).

CRCR extras: ``RELAY_ALLOWLIST`` may be a file path or an ``http(s)://`` URL (reloaded when
its mtime / ETag changes, checked at most every ``RELAY_ALLOWLIST_REFRESH_S`` seconds);
``RELAY_CALLBACK_SECRET`` signs per-dispatch callback tokens (default: derived from the webhook
secret); ``RELAY_PUBLIC_URL`` is sent to downstreams as the callback base URL;
``RELAY_OIDC_JWKS_URL`` / ``RELAY_OIDC_ISSUER`` / ``RELAY_OIDC_AUDIENCE`` accept GitHub-Actions
OIDC JWTs as callback tokens; ``RELAY_CI_PROVIDERS`` (CRCR's ``ci_providers.yml``: Buildkite
pipeline → repo) with ``RELAY_BUILDKITE_OIDC_ISSUER`` / ``RELAY_BUILDKITE_OIDC_JWKS_URL`` accepts
Buildkite OIDC JWTs; ``RELAY_CALLBACK_RATE_PER_MIN`` (100, CRCR);
``RELAY_JOB_TIMEOUT_S`` (6 h, CRCR's zombie sweeper); ``RELAY_OUTBOX_POLL_S`` and
``RELAY_OUTBOX_BACKOFF_S`` (the deliverer's poll interval and first retry wait, seconds);
``RELAY_DISPATCH_MAX_WAIT_S`` (longest rate-limit wait honoured per dispatch retry).

Quarantine (``relay.quarantine.policy``): ``RELAY_QUARANTINE_REPO`` (``org/repo`` receiving
``DISABLED <test id>`` issues; unset = records only), ``RELAY_QUARANTINE_MAIN_REF``
(``refs/heads/main``), ``RELAY_QUARANTINE_WINDOW_H`` (6), ``RELAY_QUARANTINE_FLAKY_RUNS`` (2:
flaky in more runs than this within the window disables), ``RELAY_QUARANTINE_REENABLE_GREENS``
(150) and ``RELAY_QUARANTINE_REENABLE_DAYS`` (7): PyTorch HUD's thresholds.

Selection: ``RELAY_UPSTREAM_CHECKOUT`` (a PyTorch checkout: a changed native file without a
patch is attributed to the kernels it defines at the change's head, ``selection.attribution.native``).

Webhook runs: ``RELAY_SPECS`` (spec files or directories, comma-separated; default the bundled
specs in ``test_specs/specs``).

Regression: ``RELAY_COMMIT_ENV`` maps upstream commits to environments (``relay.envs.commits``:
``git-faults:<upstream checkout>`` or a template with ``{sha}``); set, pushes and pull requests
run head against base and pushes with NEW failures are bisected for a culprit.

Catch-up (``relay.github.catchup``): ``RELAY_CATCHUP_HOOK_ID`` is the id of the ``RELAY_UPSTREAM_REPO``
webhook that delivers to this relay; set, ``relay serve`` asks GitHub at startup to redeliver
what failed while the relay was down (hook-deliveries API, 3 days back at most).

Scale-out (``relay.worker.celery``; used when ``RELAY_BROKER_URL`` is set):
``RELAY_RESULT_BACKEND`` (Celery result backend URL; default the broker), ``RELAY_CELERY_QUEUE``
(``relay``), ``RELAY_SHARD_SIZE`` (200 items per shard), ``RELAY_VISIBILITY_TIMEOUT_S`` (7,200:
seconds a delivered, unacknowledged task message stays invisible before Redis hands it to another
worker; must exceed the longest shard), ``RELAY_RESTORE_INTERVAL_S`` (10: seconds between a
worker's sweeps for such messages), ``RELAY_RESULT_WAIT_S`` (6 h: longest wait of ``relay
replay`` for a run's shards).

There is no module-level settings object: call ``get_settings()`` where needed, or pass a
``Settings`` to ``relay.service.create_app``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from relay.errors import ConfigError

__all__ = ["Settings", "get_settings", "PLACEHOLDER_SECRETS"]

#: Values refused as a webhook secret (the FastAPI template refuses its "changethis" the same way).
PLACEHOLDER_SECRETS = frozenset({"", "changeme", "changethis", "secret"})


class Settings(BaseSettings):
    """Validated relay settings.

    ``webhook_secret`` is optional here so that CLI commands that do not serve webhooks
    (``relay replay``) work without one; ``require_webhook_secret()`` is what ``relay serve``
    and ``create_app`` call.  A placeholder value is refused whenever it is set.
    """

    model_config = SettingsConfigDict(env_prefix="RELAY_", extra="ignore")

    webhook_secret: SecretStr | None = None
    state_dir: Path = Path(".relay")
    database_url: str = ""
    broker_url: str | None = None
    #: where callback rate-limit counts live (``memory://``, ``redis://...``); default: the
    #: broker when it is Redis (shared by every relay process), else this process's memory
    rate_limit_storage: str | None = None
    github_api_url: str = "https://api.github.com"
    github_token: SecretStr | None = None
    dashboard_url: str | None = None
    #: bearer token for POST /api/crcr/results (sent and required); see ``results_token``
    dashboard_token: SecretStr | None = None
    allowlist: str | None = None
    allowlist_refresh_s: float = 5.0
    upstream_repo: str = "pytorch/pytorch"
    #: a PyTorch checkout selection reads native kernels from (which kernels each changed
    #: ``aten/src/ATen/native`` file defines at the change's head; ``--upstream`` wins)
    upstream_checkout: Path | None = None
    backend: str = "spyre-sim"
    #: threads of the in-process queue (``relay.worker.queue.InProcessQueue``; unused with a broker)
    workers: int = Field(2, ge=1, le=32)
    public_url: str = "http://127.0.0.1:8000"
    callback_secret: SecretStr | None = None
    oidc_jwks_url: str | None = None
    oidc_issuer: str = "https://token.actions.githubusercontent.com"
    oidc_audience: str = "spyre-relay"
    #: CRCR ``ci_providers.yml`` (path or URL): Buildkite pipeline → repo map; set, Buildkite
    #: OIDC tokens are accepted from ``buildkite_oidc_issuer`` (keys at its JWKS URL)
    ci_providers: str | None = None
    buildkite_oidc_issuer: str = "https://agent.buildkite.com"
    buildkite_oidc_jwks_url: str | None = None
    callback_rate_per_min: int = Field(100, ge=1)
    job_timeout_s: float = 6 * 3600.0
    sweep_interval_s: float = 60.0
    outbox_poll_s: float = 1.0
    outbox_backoff_s: float = 1.0
    dispatch_max_wait_s: float = 60.0
    #: first wait before a delivery's next attempt after GitHub/the database failed it
    #: (doubling per attempt, 5 attempts, at most 15 min: ``relay.retrying.DELIVERY``)
    delivery_retry_s: float = Field(30.0, gt=0)
    #: how often a relay re-submits deliveries left ``received`` / interrupted ``processing``
    #: (``relay.service.recovery``: a lost submit, a database restart under an attempt)
    recover_interval_s: float = Field(30.0, gt=0)
    commit_env: str | None = None
    #: spec files or directories a webhook run uses, comma-separated; unset: the bundled specs
    specs: str | None = None
    # flaky-test quarantine (relay.quarantine.policy; PyTorch HUD's disable / re-enable flow)
    quarantine_repo: str | None = None  # org/repo for DISABLED issues; unset = records only
    quarantine_main_ref: str = "refs/heads/main"
    quarantine_window_h: float = Field(6.0, gt=0, le=24 * 90)  # at most 90 days
    quarantine_flaky_runs: int = Field(2, ge=0, le=10_000)  # flaky in MORE than this many runs
    quarantine_reenable_greens: int = Field(150, gt=0, le=1_000_000)
    quarantine_reenable_days: float = Field(7.0, ge=0, le=3650)
    # webhook catch-up (relay.github.catchup): the id of the UPSTREAM_REPO webhook pointing at this
    # relay; set, `relay serve` redelivers at startup what GitHub failed to deliver meanwhile
    catchup_hook_id: int | None = Field(None, ge=1)
    # scale-out on Celery (relay.worker.celery), active with broker_url
    result_backend: str | None = None
    celery_queue: str = "relay"
    shard_size: int = Field(200, ge=1)
    visibility_timeout_s: int = Field(7200, ge=1)
    # the lease a working attempt holds on its delivery and renews every third of it
    # (relay.store.leases, relay.worker.lease): a dead attempt frees its delivery after this
    lease_s: float = Field(30.0, gt=0, le=3600)
    restore_interval_s: int = Field(10, ge=1)
    result_wait_s: float = Field(6 * 3600.0, gt=0)

    @field_validator("quarantine_repo")
    @classmethod
    def _quarantine_repo(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        owner, _, name = v.strip().partition("/")
        if not owner or not name or "/" in name:
            raise ValueError("must be owner/repo")
        return v.strip()

    @field_validator("dashboard_token")
    @classmethod
    def _token_text(cls, v: SecretStr | None) -> SecretStr | None:
        """Blank means unset (a compose file's empty ``${VAR}``); surrounding spaces are dropped;
        a token must be printable ASCII (it travels in an HTTP header)."""
        if v is None:
            return None
        text = v.get_secret_value().strip()
        if not text:
            return None
        if not text.isascii() or not text.isprintable():
            raise ValueError("must be printable ASCII (it is sent as an HTTP bearer token)")
        return SecretStr(text)

    @field_validator("rate_limit_storage")
    @classmethod
    def _limits_scheme(cls, v: str | None) -> str | None:
        if v is None:
            return v
        from limits.storage import SCHEMES  # what the limits library can store counts in

        scheme = v.split("://", 1)[0] if "://" in v else ""
        if scheme not in SCHEMES or scheme.startswith("async+"):
            raise ValueError(f"unknown storage {v.split('@')[-1]!r}; use memory:// or "
                             "redis://host:port/db (the limits library's URIs)")
        return v

    @field_validator("webhook_secret")
    @classmethod
    def _no_placeholder(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and v.get_secret_value().strip().lower() in PLACEHOLDER_SECRETS:
            raise ValueError("RELAY_WEBHOOK_SECRET is empty or a placeholder; set a real secret")
        return v

    @field_validator("commit_env")
    @classmethod
    def _commit_env(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        from relay.envs.commits import parse_commit_env  # lazy: settings stay import-light

        parse_commit_env(v)  # CommitEnvError (a ValueError) names the problem
        return v.strip()

    @field_validator("github_api_url", "dashboard_url")
    @classmethod
    def _strip_slash(cls, v: str | None) -> str | None:
        return v.rstrip("/") if v else v

    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.state_dir / 'relay.db').as_posix()}"
        return self

    def callback_key(self) -> bytes:
        """The HMAC key for per-dispatch callback tokens: ``RELAY_CALLBACK_SECRET``, else
        HMAC-SHA256(webhook secret, "crcr-callback-token"); raises ``ConfigError`` if neither."""
        import hashlib
        import hmac

        if self.callback_secret is not None:
            return self.callback_secret.get_secret_value().encode("utf-8")
        base = self.require_webhook_secret().encode("utf-8")
        return hmac.new(base, b"crcr-callback-token", hashlib.sha256).digest()

    def results_token(self) -> str | None:
        """The bearer token of ``POST /api/crcr/results``: what the relay sends with its HUD
        bodies and what its own ingest requires.  ``RELAY_DASHBOARD_TOKEN``, else derived from
        the webhook secret (HMAC-SHA256(secret, "dashboard-results-token"), hex), else ``None``
        (no secret anywhere: an ingest open to loopback use only, as in a local replay)."""
        import hashlib
        import hmac

        if self.dashboard_token is not None:
            return self.dashboard_token.get_secret_value()
        if self.webhook_secret is None:
            return None
        return hmac.new(self.webhook_secret.get_secret_value().encode("utf-8"),
                        b"dashboard-results-token", hashlib.sha256).hexdigest()

    def require_broker(self) -> str:
        """The broker URL; raises ``ConfigError`` when ``RELAY_BROKER_URL`` is unset (``relay
        worker`` and the Celery mode need it)."""
        if not self.broker_url:
            raise ConfigError("RELAY_BROKER_URL must be set for the distributed mode "
                              "(e.g. redis://127.0.0.1:6379/0)")
        return self.broker_url

    def require_webhook_secret(self) -> str:
        """The webhook secret as text; raises ``ConfigError`` when unset (serve needs it)."""
        if self.webhook_secret is None:
            raise ConfigError("RELAY_WEBHOOK_SECRET must be set to serve GitHub webhooks")
        return self.webhook_secret.get_secret_value()


def get_settings(**overrides: object) -> Settings:
    """A fresh ``Settings`` read from the environment; keyword overrides win over env vars.

    Raises ``pydantic.ValidationError`` for invalid values (e.g. a placeholder secret).
    """
    return Settings(**overrides)  # type: ignore[arg-type]
