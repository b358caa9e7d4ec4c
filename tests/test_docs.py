"""The README is the newcomer's path: it must not fall behind the code."""

import re
from pathlib import Path

from sidecar.cli import COMMANDS
from sidecar.engine import ChangeKind

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_cli_command_is_in_the_readme() -> None:
    """A subcommand added to the CLI without a README line fails here (sqlite-utils style)."""
    missing = [name for name in COMMANDS if f"credence {name}" not in README]
    assert not missing, f"commands missing from README: {missing}"


def test_every_change_kind_is_in_the_readme() -> None:
    """Every change kind a notification can carry is explained in the README."""
    missing = [k.value for k in ChangeKind if f"`{k.value}`" not in README]
    assert not missing, f"change kinds missing from README: {missing}"


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    """The Quick start is two commands, and .ci/run runs the second one verbatim."""
    block = re.search(r"## Quick start\n\n```sh\n(.*?)```", README, re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "credence serve" in commands[0]
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci


def test_every_ci_step_ends_the_run_when_it_fails() -> None:
    """Under ``set -e``, bash carries on past a failing command that is not the last of an
    ``a && b`` list: a lint error or a failed install would pass CI unseen. So no step of
    .ci/run is such a list, except inside a subshell (whose failure is one failed command)."""
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert "set -euo pipefail" in ci
    steps = [line.strip() for line in ci.splitlines()]
    steps = [s for s in steps if s and not s.startswith("#") and not s.startswith("if ")]
    outside = [re.sub(r"\(.*\)", "()", s) for s in steps]
    assert not [s for s in outside if "&&" in s], "steps whose first failure CI would skip past"
    assert any(s.startswith("(") and "&&" in s for s in steps)  # (the README's test command)
