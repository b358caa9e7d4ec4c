"""The ``credence`` entry point itself (each subcommand has its own test module)."""

import json
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

from protocol import PROTOCOL_VERSION
from sidecar import __version__

ROOT = Path(__file__).resolve().parents[1]


def test_version_prints_the_package_and_protocol_version_and_exits_0() -> None:
    """``credence --version`` is one line naming the installed package and protocol versions."""
    out = subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "--version"], capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
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
