"""The CRCR tests reuse the service fixtures (a relay on loopback, the fake GitHub, ``crcr``)."""

from tests.service.conftest import (  # noqa: F401 - fixtures
    crcr,
    fake_github,
    pg_url,
    recorder,
    settings,
    start_relay,
)
