"""The callback rate limit (CRCR: 100/min per repo), in memory and shared through Redis."""

from __future__ import annotations

import os
import uuid

import pytest

from relay.crcr.ratelimit import RateLimiter, storage_uri_for
from relay.errors import CallbackRateLimited

REDIS = os.environ.get("RELAY_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/12"


def test_storage_follows_the_broker_when_it_is_redis() -> None:
    assert storage_uri_for(None, None) == "memory://"
    assert storage_uri_for(None, "amqp://guest@localhost//") == "memory://"
    assert storage_uri_for(None, "redis://r:6379/0") == "redis://r:6379/0"
    assert storage_uri_for("memory://", "redis://r:6379/0") == "memory://"


def test_memory_window_counts_per_key() -> None:
    limiter = RateLimiter(3, 60.0)
    for _ in range(3):
        limiter.check("acme/a")
    with pytest.raises(CallbackRateLimited) as info:
        limiter.check("acme/a")
    assert 1 <= info.value.retry_after <= 60
    limiter.check("acme/b")  # another repo has its own window


def test_unknown_storage_is_refused() -> None:
    with pytest.raises(Exception, match="nope"):
        RateLimiter(3, 60.0, "nope://x")


@pytest.fixture
def redis_uri() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Redis at {REDIS} not usable: {type(exc).__name__}")
    return REDIS


def test_two_relay_processes_share_one_window_through_redis(redis_uri: str) -> None:
    key = f"acme/{uuid.uuid4().hex}"  # a fresh key: no state from earlier runs
    first, second = RateLimiter(4, 60.0, redis_uri), RateLimiter(4, 60.0, redis_uri)
    first.check(key)
    second.check(key)
    first.check(key)
    second.check(key)
    for limiter in (first, second):
        with pytest.raises(CallbackRateLimited):
            limiter.check(key)


def test_unreachable_storage_fails_open() -> None:
    limiter = RateLimiter(1, 60.0, "redis://127.0.0.1:9/0")
    limiter.check("acme/a")
    limiter.check("acme/a")  # no Redis: accepted (logged), never a lost result


@pytest.mark.parametrize("uri", ["foo://x", "nonsense", "async+redis://r:6379"])
def test_an_unknown_storage_is_a_configuration_error(uri: str) -> None:
    from pydantic import ValidationError

    from relay.settings import Settings

    with pytest.raises(ValidationError, match="rate_limit_storage"):
        Settings(rate_limit_storage=uri)
    assert Settings(rate_limit_storage="redis://127.0.0.1:6379/0").rate_limit_storage
