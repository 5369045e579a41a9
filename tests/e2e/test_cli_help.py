"""``relay --help`` and every ``relay COMMAND --help`` through the real entry point read like
git's: a one-line summary listed in full, ``Usage: relay CMD [OPTIONS] REF`` with no typer
placeholders (``{REF}``, ``<str>``, ``<bool>``), paragraphs wrapped only where the width forces it,
and real examples (``relay.cli.helptext``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from relay.cli.helptext import SUMMARY_MAX

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 80
#: the ``relay`` console script installed next to this interpreter (``pip install -e .``)
RELAY = str(Path(sys.executable).parent / "relay")
PLACEHOLDER = re.compile(r"\{[A-Za-z_]+\}|<(str|bool|int|float|path|Path|list\[[a-zA-Z]+\])>")


def help_of(*command: str) -> str:
    env = {**os.environ, "COLUMNS": str(WIDTH), "TERM": "dumb"}
    proc = subprocess.run([RELAY, *command, "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def listed(text: str) -> dict[str, str]:
    """``Commands:`` of a group's help: name → summary."""
    section = text.split("Commands:\n", 1)[1]
    return dict(re.findall(r"^  (\S+)\s+(.+)$", section, re.M))


@pytest.fixture(scope="module")
def commands() -> dict[tuple[str, ...], str]:
    top = help_of()
    found = {(): top}
    for name in listed(top):
        found[(name,)] = help_of(name)
        if "Commands:" in found[(name,)]:
            for sub in listed(found[(name,)]):
                found[(name, sub)] = help_of(name, sub)
    return found


def description(text: str) -> list[list[str]]:
    """The paragraphs between the usage line and the first section (Examples, Arguments …)."""
    body = re.split(r"^  Examples:$|^Arguments:$|^Options:$|^Commands:$", text.split("\n", 1)[1], flags=re.M)[0]
    return [[line.strip() for line in para.splitlines()] for para in body.strip("\n").split("\n\n") if para.strip()]


def test_every_command_is_listed_with_its_whole_summary(commands) -> None:
    assert len(commands) >= 15 and ("send-webhook",) in commands and ("specs", "apply") in commands
    for key, text in commands.items():
        if "Commands:" in text:
            for name, summary in listed(text).items():
                assert not summary.endswith("..."), (key, name, summary)
                assert len(summary) <= SUMMARY_MAX, (key, name, summary)
                first = description(commands[(*key, name)])[0]
                assert first == [summary], (key, name, first)  # the summary is the help's first line


def test_usage_and_options_have_no_type_placeholders(commands) -> None:
    for key, text in commands.items():
        assert text.startswith(f"Usage: relay {' '.join(key)}".rstrip() + " "), text[:80]
        assert not PLACEHOLDER.search(text), (key, PLACEHOLDER.search(text).group(0))
    assert commands[("replay",)].startswith("Usage: relay replay [OPTIONS] REF\n")
    assert commands[("specs", "check")].startswith("Usage: relay specs check [OPTIONS] [PATHS]...\n")
    assert "  --spec SPEC " in commands[("replay",)] and "  --json " in commands[("replay",)]


def test_paragraphs_break_only_where_the_width_forces_it(commands) -> None:
    for key, text in commands.items():
        for para in description(text):
            for line, after in zip(para, para[1:], strict=False):
                # the next line's first word would not have fitted: a break the width forced
                assert 2 + len(line) + 1 + len(after.split()[0]) > WIDTH - 2, (key, line, after)


def test_each_command_shows_real_examples(commands) -> None:
    for key, text in commands.items():
        if key and "Commands:" not in text:
            examples = text.split("  Examples:\n", 1)
            assert len(examples) == 2, key
            assert re.search(rf"^    (\S+=\S+ )?relay {' '.join(key)}", examples[1], re.M), key


def test_summaries_say_what_the_command_does(commands) -> None:
    assert "REPO@REV" in commands[("changes",)]
    assert listed(commands[()])["specs"] == "Check specs; apply a run's proposed spec edit."
    assert "REF" in commands[("replay",)] and "--head-env" in description(commands[("replay",)])[1][0] + " ".join(
        description(commands[("replay",)])[1])
