"""Relay configuration from the environment (pydantic-settings, prefix ``RELAY_``; design §5).

Variables: ``RELAY_WEBHOOK_SECRET``, ``RELAY_DATABASE_URL`` (default
``sqlite:///<RELAY_STATE_DIR or ./.relay>/relay.db``), ``RELAY_BROKER_URL`` (unset = work runs
in-process), ``RELAY_GITHUB_API_URL``, ``RELAY_GITHUB_TOKEN``, ``RELAY_DASHBOARD_URL`` (unset =
this relay, in-process), ``RELAY_ALLOWLIST`` (path of a CRCR allowlist YAML),
``RELAY_UPSTREAM_REPO``, ``RELAY_BACKEND``.

There is no module-level settings object: call ``get_settings()`` where needed, or pass a
``Settings`` to ``relay.app.create_app``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr, field_validator, model_validator
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
    github_api_url: str = "https://api.github.com"
    github_token: SecretStr | None = None
    dashboard_url: str | None = None
    allowlist: Path | None = None
    upstream_repo: str = "pytorch/pytorch"
    backend: str = "spyre-sim"

    @field_validator("webhook_secret")
    @classmethod
    def _no_placeholder(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and v.get_secret_value().strip().lower() in PLACEHOLDER_SECRETS:
            raise ValueError("RELAY_WEBHOOK_SECRET is empty or a placeholder; set a real secret")
        return v

    @field_validator("github_api_url", "dashboard_url")
    @classmethod
    def _strip_slash(cls, v: str | None) -> str | None:
        return v.rstrip("/") if v else v

    @model_validator(mode="after")
    def _default_database(self) -> "Settings":
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.state_dir / 'relay.db').as_posix()}"
        return self

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
