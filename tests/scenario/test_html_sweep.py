"""The sweep and snapshot-cost sections of the scenario HTML report (`scenario run --html R
--sweep DIR --snapshot-cost DIR`): inline SVG drawn from the tables, the page still one
self-contained deterministic file, and the same page in a real headless Chromium."""

from __future__ import annotations

import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kraftsim.pipeline.jobs import job_inputs, run_local
from kraftsim.pipeline.snapshot_cost import parse_grid
from kraftsim.pipeline.sweep import engine
from kraftsim.pipeline.sweep.runs import sweep_inputs
from tests.cli_support import run as run_cli
from tests.pipeline.test_sweep import PLANTED
from tests.scenario.test_html import FLAGS, _chromium, _png_pixels

GRID = ["topics=2,20", "partitions=1,5", "brokers=3", "mv=3.9-IV0,4.0-IV3"]


class Charts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.charts: list[str] = []
        self.bars: dict[str, tuple[int, int]] = {}
        self.bins: dict[str, int] = {}
        self.series: list[str] = []
        self.points = 0
        self.refs: list[str] = []
        self._chart = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "svg" and "chart" in cls:
            self._chart = a["data-chart"] or ""
            self.charts.append(self._chart)
        elif tag == "g" and "bar" in cls:
            self.bars[a["data-scenario"] or ""] = (int(a["data-pass"] or 0), int(a["data-runs"] or 0))
        elif tag == "rect" and "bin" in cls:
            self.bins[self._chart] = self.bins.get(self._chart, 0) + int(a["data-count"] or 0)
        elif tag == "g" and "series" in cls:
            self.series.append(a["data-mv"] or "")
        elif tag == "circle" and self._chart == "snapshot-cost":
            self.points += 1
        for key in ("src", "href"):
            if a.get(key):
                self.refs.append(a[key] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._chart = ""


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A planted scenario, a sweep of it and torn-tail over 4 seeds with crashes, and a small
    snapshot-cost grid."""
    root = tmp_path_factory.mktemp("report")
    planted = root / "planted.toml"
    planted.write_text(PLANTED, encoding="utf-8")
    sweep = root / "sweep"
    table = engine.run_in_process(sweep_inputs([planted], range(0, 6), "crash=0.6")).table
    engine.write_local_table(table, sweep / engine.TABLE)
    engine.write_sidecar(sweep / engine.TABLE)
    cost = root / "cost"
    run_local("snapshot-cost", job_inputs("snapshot-cost", grid=parse_grid(GRID)), params={"trace_memory": False},
              output=str(cost))
    return planted, sweep, cost


def _report(outputs: tuple[Path, Path, Path], target: Path, capsys: pytest.CaptureFixture[str]) -> str:
    planted, sweep, cost = outputs
    code, _, err = run_cli(capsys, "scenario", "run", str(planted), "--html", str(target), "--sweep", str(sweep),
                           "--snapshot-cost", str(cost))
    assert code == 0, err
    return target.read_text(encoding="utf-8")


def test_sections_show_the_tables(outputs: tuple[Path, Path, Path], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    page = _report(outputs, tmp_path / "a.html", capsys)
    rows = engine.read_table(outputs[1] / engine.TABLE).to_pylist()
    passes = sum(r["verdict"] == "pass" for r in rows)
    assert 0 < passes < len(rows)  # the planted bug shows in some runs
    c = Charts()
    c.feed(page)
    assert c.charts == ["outcomes", "time", "fenced", "snapshot-cost", "snapshot-write-time", "snapshot-load-time"]
    assert c.bars == {"planted-short-admin-timeout": (passes, len(rows))}
    assert c.bins == {"time": len(rows), "fenced": len(rows)}  # every run in one bin
    assert c.series == ["3.9-IV0", "4.0-IV3"] * 3  # bytes, write seconds, load seconds
    assert c.points == 2 * 4  # 2, 10, 20, 100 partitions per version
    assert c.refs == [] and "<img" not in page and "<script src" not in page  # one self-contained file
    assert f"{passes} of {len(rows)} runs passed" in page
    for chart in ("time", "fenced"):  # the time axes' ends in the CLI's format (seconds, three decimals)
        svg = page.split(f'data-chart="{chart}"', 1)[1].split("</svg>", 1)[0]
        assert len(re.findall(r">[0-9]+\.[0-9]{3} s</text>", svg)) == 2, svg
    assert _report(outputs, tmp_path / "b.html", capsys) == page  # deterministic


def test_a_folder_that_is_not_a_sweep_is_refused_before_running(outputs: tuple[Path, Path, Path], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "scenario", "run", str(outputs[0]), "--html", str(tmp_path / "r.html"),
                           "--sweep", str(tmp_path))
    assert code == 2 and "--sweep" in err and "no table/ folder" in err
    assert not (tmp_path / "r.html").exists()
    code, _, err = run_cli(capsys, "scenario", "run", str(outputs[0]), "--sweep", str(outputs[1]))
    assert code == 2 and "give --html REPORT too" in err


@pytest.mark.parametrize("sidecar", ["[1]", '"schema"', "[" * 100_000 + "]" * 100_000])
def test_a_sidecar_of_another_shape_is_refused_before_running(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              sidecar: str) -> None:
    """Valid JSON that is not an object (or nested too deeply) was an internal error (exit 70)."""
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "disable-feature.toml"
    sweep, cost = tmp_path / "sweep", tmp_path / "cost"
    (sweep / "table").mkdir(parents=True)
    cost.mkdir()
    for side in (sweep / "table" / engine.SIDECAR, cost / engine.SIDECAR):
        side.write_text(sidecar)
    for flag, out, what in (("--sweep", sweep, "not a sweep table"),
                            ("--snapshot-cost", cost, "not an output of kraftsim's snapshot-cost job")):
        code, _, err = run_cli(capsys, "scenario", "run", str(scenario), "--html", str(tmp_path / "r.html"), flag,
                               str(out))
        assert code == 2 and what in err and "no readable _kraftsim_schema.json" in err, err
        assert not (tmp_path / "r.html").exists()


def test_a_sweep_table_that_is_not_parquet_is_refused_before_running(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Its sidecar in order but a part that is not Parquet: pyarrow's ArrowInvalid was an
    internal error (exit 70), where --snapshot-cost says what is wrong."""
    import json

    from kraftsim.pipeline.jobs import schema_version

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "disable-feature.toml"
    table = tmp_path / "sweep" / engine.TABLE
    (table / "scenario=x").mkdir(parents=True)
    (table / engine.SIDECAR).write_text(json.dumps({"schema": engine.SCHEMA, "version": schema_version(engine.SCHEMA)}))
    (table / "scenario=x" / "part-0.parquet").write_text("not parquet")
    code, _, err = run_cli(capsys, "scenario", "run", str(scenario), "--html", str(tmp_path / "r.html"), "--sweep",
                           str(tmp_path / "sweep"))
    assert code == 2 and f"--sweep {tmp_path / 'sweep'}: not a sweep output (" in err, err
    assert not (tmp_path / "r.html").exists()


def test_sections_in_headless_chromium(outputs: tuple[Path, Path, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    browser = _chromium()
    page = tmp_path / "report.html"
    _report(outputs, page, capsys)
    url = page.resolve().as_uri()
    dom = subprocess.run([browser, *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    c = Charts()
    c.feed(dom.stdout)
    assert c.charts == ["outcomes", "time", "fenced", "snapshot-cost", "snapshot-write-time", "snapshot-load-time"] and c.points == 8
    assert re.search(r"<h2>Sweep</h2>", dom.stdout) and re.search(r"<h2>Snapshot cost</h2>", dom.stdout)
    shot = tmp_path / "shot.png"
    proc = subprocess.run([browser, *FLAGS, f"--screenshot={shot}", "--window-size=1200,6000", url],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    width, channels, rows = _png_pixels(shot.read_bytes())
    colours = {row[i:i + 3] for row in rows[::4] for i in range(0, width * channels, channels * 4)}
    assert bytes((0xc0, 0x39, 0x2b)) in colours  # the fail share of the outcome bar
    assert bytes((0x2e, 0x86, 0xc1)) in colours  # the histograms' bins
    assert bytes((0x1d, 0x4f, 0x91)) in colours  # the first snapshot-cost line
