"""Settings validation and the webhook signer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from relay.errors import ConfigError, SignatureMalformed, SignatureMismatch, SignatureMissing
from relay.github.signing import sign, verify
from relay.service import create_app
from relay.settings import get_settings


def test_github_docs_test_vector() -> None:
    # GitHub docs, "Validating webhook deliveries": this secret and payload give this digest.
    assert sign(b"Hello, World!", "It's a Secret to Everybody") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")


def test_verify_errors() -> None:
    body, secret = b'{"a": 1}', "s3cr3t-value"
    verify(body, secret, sign(body, secret))
    verify(body, secret, sign(body, secret).upper().replace("SHA256=", "sha256="))
    with pytest.raises(SignatureMissing):
        verify(body, secret, None)
    with pytest.raises(SignatureMalformed):
        verify(body, secret, "sha1=" + "0" * 40)
    with pytest.raises(SignatureMismatch) as err:
        verify(body + b" ", secret, sign(body, secret))
    assert err.value.status_code == 401 and SignatureMissing.status_code == 400


@pytest.mark.parametrize("bad", ["", "changeme", "  ChangeMe "])
def test_placeholder_secret_refused(monkeypatch, bad: str) -> None:
    monkeypatch.setenv("RELAY_WEBHOOK_SECRET", bad)
    with pytest.raises(ValidationError):
        get_settings()


def test_env_and_defaults(monkeypatch, tmp_path) -> None:
    for k in ("RELAY_DATABASE_URL", "RELAY_WEBHOOK_SECRET", "RELAY_DASHBOARD_URL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RELAY_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RELAY_GITHUB_TOKEN", "ghs_x")
    s = get_settings()
    assert s.database_url == f"sqlite:///{tmp_path}/state/relay.db"
    assert s.github_api_url == "https://api.github.com" and s.upstream_repo == "pytorch/pytorch"
    assert s.github_token is not None and "ghs_x" not in repr(s)
    assert s.dashboard_url is None and s.broker_url is None and s.backend == "spyre-sim"
    with pytest.raises(ConfigError):
        create_app(s)  # serving webhooks needs a secret


def test_error_tree_is_pinned() -> None:
    import relay.errors as errors

    assert sorted(errors.__all__) == sorted([
        "RelayError", "ConfigError", "SignatureError", "SignatureHeaderError", "SignatureMissing",
        "SignatureMalformed", "SignatureMismatch", "StoreError", "RunNotFound", "GitHubError",
        "GitHubAPIError", "HudError", "HudBodyTooLarge", "HudPostError", "AllowlistError",
        "CallbackError", "CallbackAuthError", "CallbackForbidden", "CallbackRateLimited",
        "CallbackUnknown", "CallbackTransitionError",
        # CRCR features of issue 15
        "CallbackInvalid", "CiProvidersError",
        # the exceptions of the other rooms, in the one tree since issue 12
        "CommitEnvError", "InputError", "ChangeSourceError", "GitRangeError", "SymbolError",
        "SpecsInvalid", "EnvironmentError_", "ExecutionError", "ExecutionFailed", "MissingResults",
        "SpecRefError", "BisectionError", "BodyRefused", "DatabaseFileGone", "HookNotFound",
        "TrimError",
        # a stored payload the relay cannot act on: failed, never retried (issue 17)
        "PayloadInvalid"])
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.RelayError)
    assert issubclass(errors.SignatureMissing, errors.SignatureHeaderError)
    assert issubclass(errors.RunNotFound, KeyError)
    assert issubclass(errors.AllowlistError, errors.ConfigError)
    assert all(issubclass(getattr(errors, n), errors.CallbackError) for n in errors.__all__
               if n.startswith("Callback"))


def test_a_blank_signature_header_is_missing_and_padding_around_a_good_one_is_ignored() -> None:
    body, secret = b'{"a": 1}', "s3cr3t-value"
    with pytest.raises(SignatureMissing) as missing:
        verify(body, secret, "  \t")
    assert str(missing.value) == "missing X-Hub-Signature-256 header"
    verify(body, secret, f"  {sign(body, secret)}\n")


@pytest.mark.parametrize("header", ["sha256=" + "0" * 63, "sha256=" + "0" * 65, "sha256=" + "g" * 64,
                                    "0" * 64, "SHA256=" + "0" * 64, "sha256=" + "0" * 64 + " x"])
def test_only_sha256_and_64_hex_digits_is_a_signature(header) -> None:
    with pytest.raises(SignatureMalformed) as err:
        verify(b"{}", "s3cr3t-value", header)
    assert str(err.value) == "malformed X-Hub-Signature-256 header (expected sha256=<64 hex digits>)"


def test_the_same_body_signed_with_another_secret_is_a_mismatch() -> None:
    with pytest.raises(SignatureMismatch) as err:
        verify(b"{}", "s3cr3t-value", sign(b"{}", "another-secret"))
    assert str(err.value) == "signature does not match the payload"
