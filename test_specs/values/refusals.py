"""Deterministic device refusals: failures a rerun cannot turn green, so none is run.

The simulated Spyre device refuses a call with one of ``spyre_backend.errors.REFUSALS``
(``SpyreUnsupportedOpError``: no kernel; ``SpyreDtypeError``: a dtype the op does not take;
``SpyreCompileError``: a capability rule).  The same call on the same build raises the same error
every time, so PyTorch CI's rerun (pytest-rerunfailures, ``--reruns 2``) only repeats it.  A spec
template reports such an error as ``TemplateFailure: … device raised SpyreDtypeError: …``
(``test_specs.templates.kit.device_call``); an upstream test file in source-tree mode lets the
error itself propagate (``SpyreDtypeError: …``, or with its module when an older
pytest-rerunfailures matches on the crash line).  ``RERUN_EXCEPT`` matches both and is what the
runner passes to ``--rerun-except`` (pytest-rerunfailures: a failure whose exception chain,
``"<type>: <message>"`` per link, matches is not rerun).

An injected fault (``SPYRE_SIM_FAULTS``: ``raise``, ``flaky=P``) raises ``RuntimeError``, never a
refusal's class, so it stays rerunnable.  The class names are spelled here (this module is read by
the runner, which must not import torch); a test pins them to ``REFUSALS``.
"""

from __future__ import annotations

import re

from test_specs.values.results import TestResult

__all__ = ["REFUSAL_ERRORS", "RERUN_EXCEPT", "refusal_of", "mark_not_rerun"]

#: ``spyre_backend.errors.REFUSALS`` by class name.
REFUSAL_ERRORS: tuple[str, ...] = ("SpyreUnsupportedOpError", "SpyreDtypeError", "SpyreCompileError")

_NAMES = "|".join(REFUSAL_ERRORS)
#: The ``--rerun-except`` pattern: a refusal raised by the test itself (start of a chain link) or
#: reported by a spec template (``device raised <class>: ``).
RERUN_EXCEPT = rf"(^|device raised )(spyre_backend\.errors\.)?({_NAMES}): "
_REFUSAL = re.compile(rf"(?:^|device raised |\s)(?:spyre_backend\.errors\.)?({_NAMES}): ", re.MULTILINE)


def refusal_of(result: TestResult) -> str | None:
    """The refusal's class name when ``result`` is a failure caused by a deterministic device
    refusal (read from its message, then its failure output), else ``None``."""
    if result.outcome != "failed":
        return None
    for text in (result.message, result.detail):
        m = _REFUSAL.search(text or "")
        if m:
            return m.group(1)
    return None


def mark_not_rerun(result: TestResult) -> TestResult:
    """``result`` with ``not_rerun`` saying why, when it is a refusal that was not rerun
    (attempted once); itself otherwise."""
    error = refusal_of(result)
    if error is None or result.attempts > 1 or result.not_rerun:
        return result
    return result.model_copy(update={
        "not_rerun": f"not rerun: {error} is a deterministic device refusal; a rerun cannot change it"})
