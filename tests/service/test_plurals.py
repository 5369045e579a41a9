"""Counts on the pages agree with their nouns ("1 job", "2 jobs"): the ``plural`` filter, and no
template writes a count straight before a plural noun."""

from __future__ import annotations

import re
from pathlib import Path

from relay.service.templating import TEMPLATES, env, plural


def test_plural() -> None:
    assert plural(1, "job") == "1 job" and plural(0, "job") == "0 jobs" and plural(2, "job") == "2 jobs"
    assert plural(1, "delivery", "deliveries") == "1 delivery" and plural(3, "delivery", "deliveries") == "3 deliveries"
    assert plural(12000, "test") == "12,000 tests"
    assert env.from_string("{{ n|plural('round') }}").render(n=1) == "1 round"


def test_no_template_puts_a_raw_count_before_a_plural_noun() -> None:
    raw = re.compile(r"\}\}\s+(jobs|tests|runs|commits|deliveries|attempts|rounds)\b|\(s\)")
    found = [f"{p.name}: {m.group(0)}" for p in Path(TEMPLATES).glob("*.html")
             for m in raw.finditer(p.read_text()) if "|length }} of" not in m.group(0)]
    assert found == []
