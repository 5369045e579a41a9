"""What README's opening promises a new user stays true of the project: the torch the commands
install is the pin, the CPU-only install line names that pin and PyTorch's CPU index, command 1
is said to run on the installed torch with no base (the output lines it quotes are the ones
``relay.cli.render.print_ran_on`` prints), and no stale sentence says ``detail`` is empty."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPENING = README.split("## Try the service", 1)[0]


def _pin() -> str:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(d for d in deps if d.startswith("torch=="))


def test_the_cpu_wheel_line_installs_the_pinned_torch_from_the_cpu_index() -> None:
    pin = _pin()
    line = next(li for li in OPENING.splitlines() if "--index-url" in li)
    assert f"pip install {pin} --index-url https://download.pytorch.org/whl/cpu" in line
    assert f"torch is pinned to `{pin}`" in OPENING


def test_command_1_says_where_its_tests_ran_as_the_cli_prints_it() -> None:
    version = _pin().removeprefix("torch==")
    assert f"on the installed torch {version}" in OPENING and "no base run" in OPENING
    quoted = OPENING.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    assert quoted[0].startswith(f"head ran on torch {version}") and "(current — the installed torch" in quoted[0]
    assert quoted[1].startswith("no base run: torch==2.14.1 is only the change's label; add --head-env ENV "
                                "--base-env ENV to run each side in its own torch")
    assert "--head-env torch==2.14.1 --base-env torch==2.13.0" in OPENING
    render = (ROOT / "relay" / "cli" / "render.py").read_text()
    assert "is only the change's label; add --head-env ENV" in render and "the installed torch" in render


def test_no_stale_detail_sentence() -> None:
    assert not re.search(r"`detail`\s+stays\s+empty", README)
    assert "does not report tracebacks yet" not in README
