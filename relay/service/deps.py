"""Typed FastAPI dependencies, declared once: ``StateDep`` (the app's ``RelayState``),
``SessionDep``, ``SettingsDep``, ``MetricsDep``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from relay.service.metrics import Metrics
from relay.service.state import RelayState
from relay.settings import Settings

__all__ = ["StateDep", "SessionDep", "SettingsDep", "MetricsDep", "get_state", "get_session",
           "get_app_settings", "get_metrics"]


def get_state(request: Request) -> RelayState:
    """The ``RelayState`` the relay app carries as its ``state`` (``relay.service.intake.RelayApp``)."""
    return request.app.state


def get_session(request: Request) -> Iterator[Session]:
    """One session per request from the app's session factory, closed afterwards."""
    with get_state(request).session_factory() as session:
        yield session


def get_app_settings(request: Request) -> Settings:
    return get_state(request).settings


def get_metrics(request: Request) -> Metrics:
    return get_state(request).metrics


StateDep = Annotated[RelayState, Depends(get_state)]
SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
