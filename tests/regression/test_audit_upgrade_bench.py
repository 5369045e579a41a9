"""``bench/audit_upgrade.py`` prints the audit's recall and share, and every miss with its reason."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from relay.pipeline.audit import AuditReport, OutcomeChange

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("audit_upgrade", ROOT / "bench" / "audit_upgrade.py")
audit_upgrade = importlib.util.module_from_spec(spec)
spec.loader.exec_module(audit_upgrade)


def test_print_report(capsys) -> None:
    env = {"name": "torch==2.14.1", "torch_version": "2.14.1", "torch_git_version": "abc"}
    report = AuditReport(
        title="up", base="torch==2.13.0", head="torch==2.14.1", mode="upgrade",
        environments={"head": env, "base": {**env, "name": "torch==2.13.0"}}, universe=1000, selected=50,
        audited=100, selected_audited=5,
        changes=[OutcomeChange(id="s::t[add-float16]", base="passed", head="failed", selected=True),
                 OutcomeChange(id="s::t[mul-float16]", base="passed", head="failed", selected=False,
                               stage="memory", reason="memory: it calls aten::mul; …")])
    audit_upgrade.print_report(report, max_listed=10)
    out = capsys.readouterr().out
    assert "MISS s::t[mul-float16]  passed → failed  [memory] memory: it calls aten::mul" in out
    assert "hit  s::t[add-float16]" in out
    assert "recall of real outcome changes 50.0% (1/2; goal 100%), of regressions 50.0%" in out
    assert "selected share 5.00% (50/1000 of the universe; 5/100 of the audited tests)" in out
    assert "{'passed → failed': 2}" in out


def test_a_bad_limit_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        audit_upgrade.main(["--limit", "0"])
    assert exc.value.code == 2
