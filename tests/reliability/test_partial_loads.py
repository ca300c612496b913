"""`replay`, `snapshot`, `downgrade-report` and `export` never present a partial load as a
result: a torn tail is recovery (one line with its offset), other damage an error, or with
`--up-to-damage` a result labelled PARTIAL with the offset where it stops."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli_support import run
from tests.reliability import damage


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return damage.build_log_dir(tmp_path_factory.mktemp("pristine"))


@pytest.fixture()
def torn(pristine: Path, tmp_path: Path) -> tuple[Path, int]:
    d = Path(shutil.copytree(pristine, tmp_path / pristine.name))
    seg = sorted(d.glob("*.log"))[-1]
    last = damage.slices(seg.read_bytes())[-1]
    seg.write_bytes(seg.read_bytes()[:last.position + 25])
    return d, last.base_offset


@pytest.fixture()
def damaged(pristine: Path, tmp_path: Path) -> tuple[Path, int]:
    d = Path(shutil.copytree(pristine, tmp_path / pristine.name))
    seg = sorted(d.glob("*.log"))[-1]
    victim = damage.slices(seg.read_bytes())[2]
    seg.write_bytes(damage.flip_bit_at(seg.read_bytes(), victim.position + 40))
    return d, victim.base_offset




COMMANDS = {
    "replay": ["replay", "{d}", "--roundtrip", "none"],
    "downgrade-report": ["downgrade-report", "{d}", "--to", "3.7-IV4"],
    "snapshot diff": ["snapshot", "diff", "{d}", "{d}"],
    "export": ["export", "{d}", "-o", "{d}/../x.parquet"],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_damage_is_an_error_naming_file_position_and_offset(damaged: tuple[Path, int], name: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    d, offset = damaged
    code, out, err = run(capsys, *[a.format(d=d) for a in COMMANDS[name]])
    assert code in (1, 2)
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("kraftsim: error: ")
    assert f"(the log cannot be trusted from offset {offset})" in lines[0] and ".log position " in lines[0]
    assert not (d.parent / "x.parquet").exists()


@pytest.mark.parametrize("name", COMMANDS)
def test_up_to_damage_gives_a_result_labelled_partial(damaged: tuple[Path, int], name: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    d, offset = damaged
    code, out, err = run(capsys, *[a.format(d=d) for a in COMMANDS[name]], "--up-to-damage")
    assert code == 1  # a partial result never passes
    assert "PARTIAL: " in err and (f"below {offset} only" in err or f"below offset {offset} only" in err)


def test_a_partial_replay_says_where_it_stops(damaged: tuple[Path, int], capsys: pytest.CaptureFixture[str]) -> None:
    d, offset = damaged
    code, out, err = run(capsys, "replay", str(d), "--roundtrip", "none", "--no-verify", "--up-to-damage")
    assert code == 1
    assert f"  PARTIAL: loaded the offsets below {offset} only (--up-to-damage)" in out
    assert f"log offsets 27..{offset - 1};" in out


@pytest.mark.parametrize("name", ["replay", "downgrade-report", "snapshot diff"])
def test_a_torn_tail_is_recovery_in_one_line(torn: tuple[Path, int], name: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    d, offset = torn
    code, out, err = run(capsys, *[a.format(d=d) for a in COMMANDS[name]])
    assert code == 0, err
    lines = [x for x in err.splitlines() if x.startswith("kraftsim: recovery: ")]
    assert len(lines) == 2 if name == "snapshot diff" else len(lines) == 1  # diff loads the directory twice
    assert f"the torn last batch at offset {offset} (25 byte(s) at position " in lines[0]


def test_snapshot_create_refuses_damage_below_its_offset_but_not_beyond(damaged: tuple[Path, int], tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    d, offset = damaged
    out = tmp_path / "snaps"
    out.mkdir()
    code, _, err = run(capsys, "snapshot", "create", str(d), "--offset", str(offset + 1), "-o", str(out))
    assert code == 2 and f"(the log cannot be trusted from offset {offset})" in err
    assert not any(out.iterdir())
    code, _, err = run(capsys, "snapshot", "create", str(d), "--offset", str(offset), "-o", str(out))
    assert code == 0, err  # the state below the damage is whole
