"""``Mode``: how a spec item runs — torch-spyre's test modes (``tests/oot_framework``, RFC 1287).

- ``mandatory_success``: the test must pass (the default);
- ``xfail``: expected to fail; a pass is reported ``xpassed`` (non-strict);
- ``xfail_strict``: expected to fail; a pass is a failure (strict);
- ``skip``: not run; listed with its reason.

Defined here, at the bottom of the layering (``selection`` → ``test_specs`` → ``spyre_backend``),
because the spec schema, the expanded items and selection's classification all speak it.
"""

from __future__ import annotations

from typing import Literal

Mode = Literal["mandatory_success", "xfail", "xfail_strict", "skip"]

__all__ = ["Mode"]
