"""The Go tools' command lines read onto ``serve`` and ``run``: every flag, every spelling.

In-process parsing only (``server_args``, ``run_args``); the processes they
start are in ``test_go_commands.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from pineapple.cli import build_parser
from server.cli._go_commands import GO_SERVER_DEFAULTS, run_args, server_args
from server.cli._go_flags import RUN_FLAGS, SERVER_FLAGS, GoFlagError, go_bool, go_duration

C = ("-config", "c.json")


def _spellings(flag: str, value: str) -> list[list[str]]:
    """Go's four ways to give a valued flag."""
    return [[f"-{flag}", value], [f"--{flag}", value], [f"-{flag}={value}"], [f"--{flag}={value}"]]


# (Go flag, value given, the serve settings it must produce)
SERVER_TABLE: list[tuple[str, str, dict[str, Any]]] = [
    ("config", "other.json", {"config": "other.json"}),
    ("addr", ":9090", {"addr": ":9090"}),
    ("addr", "127.0.0.1:8081", {"addr": "127.0.0.1:8081"}),
    ("admin-addr", "", {"admin_addr": ""}),
    ("read-header-timeout", "2s", {"read_header_timeout_ms": 2000}),
    ("read-header-timeout", "0", {"read_header_timeout_ms": 10_000}),
    ("read-timeout", "1m30s", {"read_timeout_ms": 90_000}),
    ("read-timeout", "0s", {"read_timeout_ms": 30_000}),
    ("write-timeout", "1.5s", {"write_timeout_ms": 1500}),
    ("write-timeout", "250us", {"write_timeout_ms": 1}),
    ("idle-timeout", "2h", {"idle_timeout_ms": 7_200_000}),
    ("idle-timeout", "0", {"idle_timeout_ms": 120_000}),
    ("max-body-size", "1048576", {"max_body_bytes": 1 << 20}),
    ("max-body-size", "0", {"max_body_bytes": 10 << 20}),
    ("max-body-size", "0x100000", {"max_body_bytes": 1 << 20}),
    ("watch", "false", {"no_watch": True}),
    ("watch", "true", {"no_watch": False}),
    ("watch", "0", {"no_watch": True}),
    ("demo-routes", "false", {"demo_routes": False}),
]


def test_the_table_covers_every_go_server_flag() -> None:
    assert {flag for flag, _, _ in SERVER_TABLE} == set(SERVER_FLAGS)


@pytest.mark.parametrize(("flag", "value", "want"), SERVER_TABLE)
def test_each_go_server_flag_in_each_spelling(flag: str, value: str, want: dict[str, Any]) -> None:
    for spelled in _spellings(flag, value):
        if flag in ("watch", "demo-routes") and "=" not in spelled[0]:
            continue  # a Go bool flag never takes the next token: -watch false is two things
        args = server_args([*C, *spelled])
        assert {key: getattr(args, key) for key in want} == want, spelled


def test_go_defaults_when_no_flag_is_given() -> None:
    args = server_args(C)
    assert args.config == "c.json"
    assert args.addr == ":8080"  # every interface, as Go
    assert args.request_timeout_ms == 0  # Go has no /execute deadline
    assert args.max_body_bytes == 10 << 20
    assert (args.read_header_timeout_ms, args.read_timeout_ms) == (10_000, 30_000)
    assert (args.write_timeout_ms, args.idle_timeout_ms) == (60_000, 120_000)
    assert args.no_watch is False and args.prog == "pineapple-server"
    assert args.drain_seconds == 5.0  # Go's Shutdown deadline
    # the same defaults `pineapple serve` has for everything Go does not set
    serve = build_parser().parse_args(["serve", "c.json"])
    go_set = {"prog", "config", *GO_SERVER_DEFAULTS}
    for key, value in vars(serve).items():
        if key not in go_set and key not in ("func", "command"):
            assert getattr(args, key) == value, key


def test_bare_bool_flags_and_our_own_flags_in_go_spelling() -> None:
    args = server_args(
        [*C, "-workers", "2", "-request-timeout-ms=500", "--access-log", "-no-watch"]
    )
    assert (args.workers, args.request_timeout_ms, args.access_log) == (2, 500, True)
    assert args.no_watch is True
    assert server_args([*C, "-watch"]).no_watch is False
    off = server_args([*C, "-access-log", "-access-log=false"])  # the last one wins, as Go
    assert off.access_log is False
    repeated = server_args([*C, "-trust-proxy", "10.0.0.0/8", "-trust-proxy=192.168.0.0/16"])
    assert repeated.trust_proxy == ["10.0.0.0/8", "192.168.0.0/16"]
    # Go's rule: a valued flag takes the next token whatever it looks like
    assert server_args([*C, "-addr", "-weird"]).addr == "-weird"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*C, "-admin-addr", ":6060"], "-admin-addr :6060: Go's pprof listener"),
        ([*C, "-demo-routes"], "-demo-routes: Go's POST /api/echo"),
        ([*C, "-demo-routes=true"], "-demo-routes"),
        ([*C, "-bogus"], "flag provided but not defined: -bogus"),
        ([*C, "-addr"], "flag needs an argument: -addr"),
        ([*C, "-watch", "false"], "'false' is not one"),
        ([*C, "extra"], "'extra' is not one"),
        ([*C, "---addr", ":1"], "bad flag syntax: ---addr"),
        ([*C, "-=x"], "bad flag syntax: -=x"),
        ([*C, "-access-log=maybe"], "invalid boolean value 'maybe' for -access-log"),
        ([*C, "-write-timeout", "1s", "-write-timeout-ms", "5"], "set the same bound"),
        ([*C, "-max-body-size", "1", "--max-body-bytes", "5"], "set the same bound"),
        ([*C, "-idle-timeout", "-1s"], "-idle-timeout must be >= 0"),
        ([*C, "-watch=false", "-no-watch"], "-watch and -no-watch both given"),
        (["-addr", ":1"], "-config is required"),
        (["-config", "c.json", "--", "-addr"], "'-addr' is not one"),
        (["x"] * 1025, "more than 1024 command-line arguments"),
    ],
)
def test_refusals_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(GoFlagError, match=None) as info:
        server_args(argv)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "argv",
    [[*C, "-read-timeout", "5"], [*C, "-write-timeout=5x"], [*C, "-max-body-size", "ten"]],
)
def test_bad_values_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        server_args(argv)
    assert info.value.code == 2
    assert argv[-1].split("=")[-1] in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("-0", 0),
        ("300ms", 300_000_000),
        ("1.5s", 1_500_000_000),
        (".5s", 500_000_000),
        ("5.s", 5_000_000_000),
        ("2h45m", 9_900_000_000_000),
        ("1h0m0.5s", 3_600_500_000_000),
        ("-1.5h", -5_400_000_000_000),
        ("+10ns", 10),
        ("7us", 7_000),
        ("7\u00b5s", 7_000),
        ("7\u03bcs", 7_000),
    ],
)
def test_go_durations(text: str, ns: int) -> None:
    assert go_duration(text) == ns


@pytest.mark.parametrize("text", ["", "1", "s", ".s", "1.2.3s", "1d", "1s2", "ms1", "9" * 65])
def test_bad_go_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        go_duration(text)


def test_go_duration_range_is_int64_nanoseconds() -> None:
    assert go_duration("2562047h") == 2562047 * 3_600_000_000_000
    with pytest.raises(argparse.ArgumentTypeError, match="out of range"):
        go_duration("2562048h")


def test_go_bools() -> None:
    assert [go_bool(t) for t in ("1", "t", "T", "true", "TRUE", "True")] == [True] * 6
    assert [go_bool(t) for t in ("0", "f", "F", "false", "FALSE", "False")] == [False] * 6
    with pytest.raises(argparse.ArgumentTypeError):
        go_bool("yes")


RUN_TABLE: list[tuple[str, str, dict[str, Any]]] = [
    ("config", "p.json", {"config": "p.json"}),
    ("request", "r.json", {"request": "r.json"}),
    ("static-resources", "s.json", {"static_resources": "s.json"}),
]


def test_the_run_table_covers_every_go_run_flag() -> None:
    assert {flag for flag, _, _ in RUN_TABLE} == set(RUN_FLAGS)


@pytest.mark.parametrize(("flag", "value", "want"), RUN_TABLE)
def test_each_go_run_flag_in_each_spelling(flag: str, value: str, want: dict[str, Any]) -> None:
    base = ["-config", "c.json", "-request", "-"]
    for spelled in _spellings(flag, value):
        args = run_args([*base, *spelled])
        assert args is not None
        assert {key: getattr(args, key) for key in want} == want, spelled


def test_run_defaults_are_gos_and_our_flags_are_taken() -> None:
    args = run_args(["-config", "c.json", "-request", "r.json"])
    assert args is not None
    assert args.timeout_ms == 0  # Go's pineapple-run has no deadline
    assert args.static_resources is None and args.prog == "pineapple-run"
    ours = run_args(["-config=c", "-request=r", "-timeout-ms", "50", "-trace", "-bench-stubs"])
    assert ours is not None and (ours.timeout_ms, ours.trace, ours.bench_stubs) == (50, True, True)
    assert run_args(["-config", "c.json"]) is None  # Go: usage, exit 1
    assert run_args(["-request", "r.json"]) is None


@pytest.mark.parametrize(
    ("argv", "drop_in"),
    [
        (["serve", "-config", "c.json", "-addr", ":8080"], "pineapple-server"),
        (["serve", "c.json", "-addr", ":8080"], "pineapple-server"),
        (["serve", "c.json", "--write-timeout", "5s"], "pineapple-server"),
        (["serve", "c.json", "-watch=false"], "pineapple-server"),
        (["run", "-config", "c.json", "-request", "r.json"], "pineapple-run"),
        (["run", "c.json", "-request", "r.json"], "pineapple-run"),
    ],
)
def test_go_spelling_on_our_subcommands_names_the_drop_in(
    argv: list[str], drop_in: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "the Go tool's spelling" in err and f"{drop_in} -config c.json" in err


def test_our_own_spelling_still_parses_and_hints_stay_out_of_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["serve", "c.json", "--addr", ":1", "--read-timeout-ms", "5"])
    assert (args.config, args.addr, args.read_timeout_ms, args.prog) == (
        "c.json",
        ":1",
        5,
        "pineapple serve",
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    assert "-admin-addr" not in capsys.readouterr().out
