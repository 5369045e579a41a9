"""Fixtures for the spec-system tests: fixture paths and the test-only fault templates."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FAULTS_MODULE = "tests.fixtures.fault_templates"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def fault_templates(monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers ``TestFault::*`` templates in this process and exports the env for children."""
    monkeypatch.setenv("SPYRE_SPEC_TEMPLATES", FAULTS_MODULE)
    import tests.fixtures.fault_templates  # noqa: F401

    return FAULTS_MODULE
