"""``relay replay torch==X..torch==Y`` checks the pair before anything is downloaded: three
dots, a side that is not ``torch==<version>`` or the same release twice end at once with the
reason (exit 2) and leave no wheel directory behind."""

from __future__ import annotations

import pytest

from relay.envs.versions import version_pair
from relay.errors import InputError
from tests.e2e.test_replay_cli import relay


@pytest.mark.parametrize(("ref", "reason"), [
    ("torch==2.13.0...torch==2.14.1", "two dots"),
    ("torch==2.13.0..torch==2.14.x", "'2.14.x' is not a version"),
    ("torch==2.13.0..2.14.1", "is not a torch release"),
    ("torch==2.13.0..torch==2.13.0", "both sides are torch==2.13.0"),
])
def test_a_malformed_pair_is_refused_before_any_download(tmp_path, ref, reason) -> None:
    (tmp_path / "x.yaml").write_text("test_suite_config: {files: []}\n")
    proc = relay("replay", ref, "--spec", "x.yaml", state=tmp_path / "state", cwd=tmp_path)
    assert proc.returncode == 2 and reason in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "state" / "wheels").exists()  # nothing was fetched


def test_a_pair_and_what_is_no_pair() -> None:
    assert version_pair(" torch==2.13.0..torch==2.14.1 ") == ("torch==2.13.0", "torch==2.14.1")
    assert version_pair("torch==2.14.0rc1..torch==2.14.1") == ("torch==2.14.0rc1", "torch==2.14.1")
    assert version_pair("abc123..def456") is None and version_pair("torch==2.13.0") is None
    with pytest.raises(InputError, match="two dots"):
        version_pair("torch==2.13.0...torch==2.14.1")
