"""The ``credence`` entry point itself (each subcommand has its own test module)."""

import argparse
import json
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from protocol import PROTOCOL_VERSION
from sidecar import __version__

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module", ["sidecar.cli", "sidecar"])
def test_version_prints_the_package_and_protocol_version_and_exits_0(module: str) -> None:
    """``credence --version`` (also ``python -m sidecar``) is one line naming the installed
    package and protocol versions."""
    out = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"credence {__version__} (protocol {PROTOCOL_VERSION})\n"


def test_the_version_has_one_source() -> None:
    """``sidecar.__version__``, pyproject's version and the installed metadata agree."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert __version__ == project["version"] == version("credence-sidecar")


def test_the_license_is_one_spdx_expression_everywhere() -> None:
    """pyproject names LICENSE's license as an SPDX expression, and the JS package agrees."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert project["license"] == "MIT" and text.startswith("MIT License\n")
    assert "LICENSE" in project["license-files"]
    package = json.loads((ROOT / "protocol/clients/js/package.json").read_text(encoding="utf-8"))
    assert package["license"] == project["license"]


def test_the_changelog_names_this_version_and_its_protocol() -> None:
    """CHANGELOG.md has a section for the current version that names its protocol version."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{__version__}] — protocol {PROTOCOL_VERSION}" in text


def _number_flags() -> list[tuple[str, str]]:
    """Every (subcommand, flag) of ``credence`` that takes a number."""
    from sidecar.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = []
    for name, command in sub.choices.items():
        for action in command._actions:
            if action.type is not None and action.type is not Path:
                flags.append((name, action.option_strings[0]))
    return flags


def test_every_typed_flag_is_a_path_or_a_checked_number() -> None:
    """No subcommand parses a number its own way: each number flag is ``commands.number``."""
    from sidecar.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        for action in command._actions:
            if action.type is None or action.type is Path:
                continue
            assert action.type.__qualname__ in {
                "number.<locals>.parse",
                "numbers.<locals>.parse",
            }, (
                name,
                action.dest,
            )
    assert ("load", "--rate") in _number_flags() and ("replay", "--speed") in _number_flags()


@pytest.mark.parametrize("bad", ["nan", "inf", "-1e400", "12abc"])
@pytest.mark.parametrize(("command", "flag"), _number_flags())
def test_every_number_flag_refuses_a_non_number_in_one_line(
    command: str, flag: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """NaN, ±inf and text in any number flag are a one-line usage error, exit 2, before the
    command runs (``--speed inf`` or ``--rate nan`` once slipped through)."""
    from sidecar.cli import main

    needs = {"replay": ["scenario.jsonl"], "import": ["f.credence"]}.get(command, [])
    with pytest.raises(SystemExit) as exit_:
        main([command, *needs, f"{flag}={bad}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"argument {flag}: " in err and "must be" in err, err
