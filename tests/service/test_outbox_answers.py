"""Which dashboard answers keep a result waiting (retried) and which drop it (dead), and the
settings and CLI edges around the results token."""

from __future__ import annotations

import httpx
import pytest
from pydantic import ValidationError

from relay.crcr.outbox import Retry, hud_handler
from relay.settings import Settings


def _answering(status: int):
    return hud_handler(lambda body: httpx.Response(status, text="nope"))


@pytest.mark.parametrize("status", [401, 403, 408, 429, 500, 503])
def test_fixable_answers_keep_the_result_for_a_retry(status: int) -> None:
    with pytest.raises(Retry, match=str(status)):
        _answering(status)(None, {"x": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [400, 413, 422])
def test_a_refused_body_is_dropped_with_the_answer(status: int) -> None:
    with pytest.raises(ValueError, match=f"refused the body: {status}"):
        _answering(status)(None, {"x": 1})  # type: ignore[arg-type]


def test_results_token_blank_means_unset_and_must_be_ascii() -> None:
    assert Settings(dashboard_token="").dashboard_token is None
    assert Settings(dashboard_token="   ").dashboard_token is None
    assert Settings(dashboard_token=" abc ").results_token() == "abc"
    derived = Settings(webhook_secret="a-real-secret-0123456789", dashboard_token="").results_token()
    assert derived is not None and len(derived) == 64  # blank falls back to the derived token
    with pytest.raises(ValidationError, match="printable ASCII"):
        Settings(dashboard_token="tök")


def test_cli_survives_odd_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    import relay.cli.common as common

    for value in ("abc", "0", "-5", "99999"):
        monkeypatch.setenv("COLUMNS", value)
        assert common._piped_width() == 160
    monkeypatch.setenv("COLUMNS", "120")
    assert common._piped_width() == 120
