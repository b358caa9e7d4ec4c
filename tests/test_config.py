"""The config file and rules files: parsing, one-line errors, flags over the file."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.cli import build_parser
from sidecar.commands.serve import server_config
from sidecar.config import ConfigError, load_config, load_rules
from sidecar.engine import DEFAULT_RULES, RulesError, rules_from_mapping


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def serve_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def test_full_config_file_is_read(tmp_path: Path) -> None:
    """Every section of a config file lands in the server config, paths relative to the file."""
    write(tmp_path / "town.toml", "decay_period_days = 3\n")
    cfg = write(
        tmp_path / "credence.toml",
        """
host = "0.0.0.0"
port = 9000
db = "state/c.db"
synchronous = "normal"
log_level = "debug"
[tokens]
writer = ["w1"]
reader = "r1"
[limits]
max_frame = 4096
hello_timeout = 2
backlog_stall = 4.5
[rules]
decay_step = 5
[worlds.town]
rules = "town.toml"
writer_token = "tw"
[worlds.north.rules]
firsthand_initial = 90
""",
    )
    config, level = server_config(serve_args("--config", str(cfg)))
    assert (config.host, config.port, config.synchronous, level) == (
        "0.0.0.0", 9000, "NORMAL", "DEBUG",
    )  # fmt: skip
    assert config.db == tmp_path / "state" / "c.db"
    assert list(config.writer_tokens) == ["w1", "town=tw"]
    assert list(config.reader_tokens) == ["r1"]
    assert config.max_frame == 4096 and config.hello_timeout == 2.0
    assert config.backlog_stall == 4.5
    assert config.rules.decay_step == 5
    assert config.world_rules["town"].decay_period_days == 3
    assert config.world_rules["north"].firsthand_initial == 90


def test_flags_override_the_file(tmp_path: Path) -> None:
    """A flag wins over the same setting in the file; tokens from both are kept."""
    cfg = write(tmp_path / "c.toml", 'port = 9000\nhost = "127.0.0.2"\n[tokens]\nwriter = "a"\n')
    rules = write(tmp_path / "r.toml", "doubt_step = 11\n")
    config, _ = server_config(
        serve_args("--config", str(cfg), "--port", "9100", "--token", "b", "--rules", str(rules))
    )
    assert (config.port, config.host) == (9100, "127.0.0.2")
    assert list(config.writer_tokens) == ["a", "b"]
    assert config.rules.doubt_step == 11


def test_defaults_without_a_config_file() -> None:
    """No file, no flags: the documented defaults."""
    config, level = server_config(serve_args())
    assert (config.host, config.port, str(config.db), level) == (
        "127.0.0.1", 8765, "credence.db", "INFO",
    )  # fmt: skip
    assert config.rules == DEFAULT_RULES and config.metrics


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prot = 1\n", "unknown key 'prot'"),
        ("port = 'x'\n", "port must be an integer from 0 to 65535, not str 'x'"),
        ("port = 70000\n", "port must be an integer"),
        ('db = "a"\ndata_dir = "b"\n', "not both"),
        ("[limits]\nmax_frames = 3\n", "unknown limit 'max_frames'"),
        ("[limits]\nmax_frame = -3\n", "limits.max_frame must be an integer from 1024 to"),
        ("[limits]\nmax_frame = 0\n", "limits.max_frame must be an integer from 1024 to"),
        ("[limits]\nhello_timeout = nan\n", "limits.hello_timeout must be a number from 0.1"),
        ("[limits]\nbacklog_stall = 0\n", "limits.backlog_stall must be a number from 0.1"),
        ("[limits]\nshutdown_timeout = inf\n", "limits.shutdown_timeout must be a number"),
        ("[limits]\nreaders = 0\n", "limits.readers must be an integer from 1 to 64"),
        ("[limits]\nmax_inflight = true\n", "limits.max_inflight must be an integer"),
        ("[worlds.'']\nrules = 'x'\n", "a world id is 1 to 200 characters"),
        (f"[worlds.{'w' * 201}]\nrules = 'x'\n", "a world id is 1 to 200 characters"),
        ("[worlds.'a\\nb'.rules]\nx = 1\n", "unknown rule 'x'"),
        ("[rules]\ndecay_step = 0\n", "rules: decay_step must be an integer from 1 to 100, not 0"),
        ("[rules]\nreinforce_step = 1e300\n", "reinforce_step must be an integer from 0 to 100"),
        ("[rules]\nseed = 18446744073709551615\n", "seed must be an integer from 0 to"),
        ("[rules]\ntrust_default = nan\n", "trust_default must be a number from 0 to 1"),
        ("[rules]\nmisremember = 2\n", "misremember must be a number from 0 to 1, not 2"),
        ("[" + ".".join(["a"] * 5000) + "]\nx = 1\n", "nested deeper than 32"),
        ("a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n", "nested deeper than 32"),
        ("[limits]\nmax_frame = 2.5\n", "whole number"),
        ("[rules]\ndecay_stp = 3\n", "unknown rule 'decay_stp' (did you mean 'decay_step'?)"),
        ("[rules]\ndecay_step = 'x'\n", "decay_step must be an integer from 1 to 100, not str"),
        ("[rules]\nfile = 'missing.toml'\n", "no such file"),
        ("[worlds.town]\nrule = 'x'\n", "unknown key worlds.town.rule"),
        ("[worlds.town.rules]\nfirsthand_initial = 101\n", "worlds.town.rules: firsthand_initial"),
        ("synchronous = 'OFF'\n", "synchronous must be FULL or NORMAL"),
        ("port = \n", "not valid TOML"),
        ("[tokens]\nadmin = 'x'\n", "unknown key tokens.admin"),
    ],
)
def test_bad_config_is_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    """Each mistake in a config file names the file and the key, on one line."""
    cfg = write(tmp_path / "c.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert message in str(info.value)
    assert str(cfg) in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"hearsay_initial": 50}, "hearsay_initial is not a rule of its own"),
        ({"reinforce_step": 2.5}, "reinforce_step must be a whole number"),
        ({"reinforce_step": True}, "reinforce_step must be an integer from 0 to 100, not bool"),
        ({"reinforce_step": "8"}, "reinforce_step must be an integer from 0 to 100, not str '8'"),
        ({"doubt_step": [20]}, "doubt_step must be an integer from 0 to 100, not list [20]"),
        ({"doubt_step": -1}, "doubt_step must be an integer from 0 to 100, not -1"),
        ({"decay_step": 0}, "decay_step must be an integer from 1 to 100, not 0"),
        ({"decay_period_days": 0}, "decay_period_days must be a number from 0.001 to 1e12"),
        ({"decay_period_days": float("inf")}, "decay_period_days must be a number from 0.001"),
        ({"trust_default": 1.5}, "trust_default must be a number from 0 to 1, not 1.5"),
        ({"trust_default": float("nan")}, "trust_default must be a number from 0 to 1, not nan"),
        ({"seed": 2**64}, "seed must be an integer from 0 to 9007199254740991"),
        ({"late_event_days": 1e13}, "late_event_days must be a number from 0 to 1e12"),
        ({"hearsay_min": 60, "hearsay_max": 50}, "hearsay_min (60) must not exceed hearsay_max"),
        ({"mutable_prefixes": "location:"}, "mutable_prefixes must be a list"),
    ],
)
def test_bad_rules_are_refused_with_the_rule_named(table: dict[str, object], message: str) -> None:
    """A rules table is checked against Rules: names, types and values."""
    with pytest.raises(RulesError, match=r"^x\.toml: ") as info:
        rules_from_mapping(table, "x.toml")
    assert message in str(info.value)


def test_rules_file_sets_every_kind_of_number(tmp_path: Path) -> None:
    """Integers, floats (an integer given for a float is fine) and prefixes load as typed."""
    path = write(
        tmp_path / "r.toml",
        "reinforce_step = 3\ndecay_period_days = 10\ntrust_default = 0.5\n"
        "mutable_prefixes = ['location:']\nhearsay_base = 30.0\n",
    )
    rules = load_rules(path)
    assert rules.reinforce_step == 3 and rules.decay_period_days == 10.0
    assert isinstance(rules.decay_period_days, float) and isinstance(rules.hearsay_base, int)
    assert rules.mutable_prefixes == ("location:",)
    assert rules.trust_default == 0.5


def test_hearsay_initial_is_the_formula_at_default_trust() -> None:
    """hearsay_initial is no separate number: the trust formula at trust_default (58)."""
    assert DEFAULT_RULES.hearsay_initial == 58 == DEFAULT_RULES.hearsay_confidence(0.6)
    assert rules_from_mapping({"trust_default": 0.9}).hearsay_initial == 75
    assert rules_from_mapping({"hearsay_base": 45}).hearsay_initial == 68


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_serve_with_a_bad_config_exits_2_with_one_line(tmp_path: Path) -> None:
    """credence serve refuses a bad config file before binding: one line, exit status 2."""
    cfg = write(tmp_path / "c.toml", "[rules]\nsoften_stp = 3\n")
    proc = run_cli("serve", "--config", str(cfg), "--port", "0")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown rule 'soften_stp'" in lines[0], proc.stderr
    proc = run_cli("serve", "--rules", str(tmp_path / "nope.toml"), "--port", "0")
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_stored_rules_upcast_from_version_1_and_refuse_newer() -> None:
    """Rules stored before hearsay_initial went still load; a newer stored form is refused."""
    from sidecar.engine import RULES_VERSION, rules_from_stored, rules_to_stored

    old = {**rules_to_stored(DEFAULT_RULES), "hearsay_initial": 58}
    del old["version"]
    assert rules_from_stored(old) == DEFAULT_RULES
    stored = rules_to_stored(rules_from_mapping({"doubt_step": 3}))
    assert stored["version"] == RULES_VERSION and rules_from_stored(stored).doubt_step == 3
    with pytest.raises(RulesError, match="version"):
        rules_from_stored({**stored, "version": RULES_VERSION + 1})


async def test_a_world_keeps_the_rules_it_was_created_with(tmp_path: Path) -> None:
    """Per-world rules apply at creation; a restart with other rules changes only new worlds."""
    from wsclient import WsClient, observe, running

    async def formed(sc: object, world: str, eid: str) -> int:
        async with WsClient(sc.url, world, subscribe="*") as c:  # type: ignore[attr-defined]
            await c.event("observe", 1, event_id=eid, **observe(["mira"], f"k:{eid}", 1))
            return int((await c.next_of("belief"))["confidence"])

    north = {"north": rules_from_mapping({"firsthand_initial": 90})}
    async with running(tmp_path, world_rules=north) as sc:
        assert await formed(sc, "north", "a") == 90
        assert await formed(sc, "south", "a") == 78
    later = rules_from_mapping({"firsthand_initial": 50})
    async with running(tmp_path, rules=later) as sc:
        assert await formed(sc, "north", "b") == 90
        assert await formed(sc, "south", "b") == 78
        assert await formed(sc, "east", "b") == 50
    from sidecar.store import rebuild

    assert rebuild(tmp_path / "x.db").ok  # the rebuild replays each world with its own rules


def test_max_open_worlds_comes_from_the_file_or_the_flag_and_is_checked(tmp_path: Path) -> None:
    """`[limits] max_open_worlds` sizes the pool of open world files, --max-open-worlds wins
    over it; 0, a fraction or a negative count is refused in one line; the default is 64."""
    cfg = write(tmp_path / "c.toml", "[limits]\nmax_open_worlds = 8\n")
    assert server_config(serve_args("--config", str(cfg)))[0].max_open_worlds == 8
    flagged = serve_args("--config", str(cfg), "--max-open-worlds", "3")
    assert server_config(flagged)[0].max_open_worlds == 3
    assert server_config(serve_args())[0].max_open_worlds == 64
    for bad in ("0", "2.5", "-1"):
        with pytest.raises(ConfigError, match="max_open_worlds must be a") as info:
            load_config(write(tmp_path / "bad.toml", f"[limits]\nmax_open_worlds = {bad}\n"))
        assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="--max-open-worlds must be an integer from 1 to"):
        server_config(serve_args("--max-open-worlds", "0"))


def test_max_connections_comes_from_the_file_or_the_flag_and_is_checked(tmp_path: Path) -> None:
    """`[limits] max_connections` bounds the connections served at once, --max-connections
    wins over it; 0, a fraction, a negative or NaN count is refused in one line; the default
    (None) is what the file-handle limit leaves (sidecar/server/handles.py)."""
    cfg = write(tmp_path / "c.toml", "[limits]\nmax_connections = 40\n")
    assert server_config(serve_args("--config", str(cfg)))[0].max_connections == 40
    flagged = serve_args("--config", str(cfg), "--max-connections", "7")
    assert server_config(flagged)[0].max_connections == 7
    assert server_config(serve_args())[0].max_connections is None
    for bad in ("0", "2.5", "-1", "nan"):
        with pytest.raises(ConfigError, match="max_connections must be a") as info:
            load_config(write(tmp_path / "bad.toml", f"[limits]\nmax_connections = {bad}\n"))
        assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="--max-connections must be an integer from 1 to"):
        server_config(serve_args("--max-connections", "0"))


def test_capture_max_bytes_comes_from_the_file_or_the_flag_and_is_checked(tmp_path: Path) -> None:
    """`capture_max_bytes` bounds the capture file (rotated to FILE.1 past it), the flag
    --capture-max-bytes wins over it, both through the one settings check (1024 to 2^40):
    0, a fraction, a string or 2^40 + 1 is one line; the default is 256 MiB."""
    cfg = write(tmp_path / "c.toml", 'capture = "f.capture"\ncapture_max_bytes = 4096\n')
    config = server_config(serve_args("--config", str(cfg)))[0]
    assert (config.capture, config.capture_max_bytes) == (tmp_path / "f.capture", 4096)
    flagged = serve_args("--config", str(cfg), "--capture-max-bytes", "8192")
    assert server_config(flagged)[0].capture_max_bytes == 8192
    assert server_config(serve_args())[0].capture_max_bytes == 256 * 2**20
    for bad in ("0", "2.5", "'big'", str(2**40 + 1), "true"):
        with pytest.raises(ConfigError, match="capture_max_bytes must be a") as info:
            load_config(write(tmp_path / "bad.toml", f"capture_max_bytes = {bad}\n"))
        assert "\n" not in str(info.value) and str(tmp_path / "bad.toml") in str(info.value)
    for bad in ("0", "1023", "2048.5", "x", "-5"):
        with pytest.raises(ConfigError, match=r"--capture-max-bytes must be .*integer from 1024"):
            server_config(serve_args("--capture-max-bytes", bad))
