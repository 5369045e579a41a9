"""Typed FastAPI dependencies, declared once: ``SessionDep``, ``SettingsDep``, ``MetricsDep``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from relay.service.metrics import Metrics
from relay.settings import Settings

__all__ = ["SessionDep", "SettingsDep", "MetricsDep", "get_session", "get_app_settings"]


def get_session(request: Request) -> Iterator[Session]:
    """One session per request from the app's session factory, closed afterwards."""
    with request.app.state.session_factory() as session:
        yield session


def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
