"""HTML reports: structure (a lane per node, a row per step), self-contained, deterministic;
and the same page in a real headless Chromium (DOM and a non-blank screenshot), with the
planted faults of three shipped scenarios drawn as spans and step labels that never overlap."""

from __future__ import annotations

import html as html_module
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kraftsim.scenario import load_scenario
from kraftsim.scenario.html_report import render, write_report
from kraftsim.scenario.runner import RunOutcome, run_scenario
from kraftsim.scenario.timeline_svg import text_width

from tests.scenario.helpers import SUITE, run_text

BODY = """
[[step]]
op = "create-topics"
count = 1
partitions = 2
[[step]]
op = "roll"
release = "3.9"
nodes = "controllers"
[[step]]
op = "stop"
nodes = [3]
[[step]]
op = "features-downgrade"
metadata = "3.7-IV1"
unsafe = true
expect_error = "Unsafe metadata downgrade is not supported"
[expect]
running = [1, 2]
"""


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.lanes: list[str] = []
        self.steps: list[str] = []
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "g" and "lane" in classes:
            self.lanes.append(a["data-node"] or "")
        if tag == "tr" and "step" in classes:
            self.steps.append(a["data-index"] or "")
        for key in ("src", "href"):
            if a.get(key):
                self.refs.append(a[key] or "")


def test_report_structure_and_determinism(tmp_path: Path) -> None:
    run = run_text(BODY)
    page = render(run)
    c = Collect()
    c.feed(page)
    assert c.lanes == ["1", "2", "3"]
    assert c.steps == ["1", "2", "3", "4"]
    assert c.refs == []  # nothing fetched: no scripts, styles or images from anywhere
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "broker log dirs: broker 2" in page  # the loss report of step 4
    assert 'data-state="stopped"' in page  # node 3's lane ends stopped
    assert page == render(run_text(BODY))
    write_report(run, tmp_path / "sub" / "r.html")
    assert (tmp_path / "sub" / "r.html").read_text(encoding="utf-8") == page


def test_long_output_is_collapsed_and_times_read_as_the_cli_prints_them() -> None:
    run = run_text('[[step]]\nop = "create-topics"\ncount = 20\npartitions = 1\n')
    page = render(run).split('<script type="application/json"')[0]  # the page, not the embedded result
    assert page.count("Created topic") == 20
    shown, _, rest = page.partition("<details><summary>12 more line(s)</summary>")
    assert shown.count("Created topic") == 8 and rest.count("Created topic") == 12  # the CLI's 8, then the rest
    step_time = run.result.steps[0].time_ms
    assert f'<td class="time">+{step_time // 1000}.{step_time % 1000:03d} s</td>' in page
    assert re.search(r'class="tick" x="[0-9.]+" y="[0-9]+" text-anchor="middle">\+0\.000 s<', page)


def test_losses_are_tables_grouped_by_kind_and_topic_each_shown_once() -> None:
    """The lossy kip-778 downgrade: the prediction of step 2 as a table (kind, topic, count),
    every item once under <details>; step 3 and the carried-out change name it, not repeat it."""
    run = run_scenario(load_scenario(SUITE / "downgrade-lossy-kip778.toml"))
    page = render(run)
    section = page.split("<h2>Loss reports</h2>")[1].split("<h2>Expectations</h2>")[0]
    items = run.result.mv_changes[0].losses
    assert len(items) == 7
    for item in items:
        assert section.count(item) == 1, item
    table = section.split('<table class="losses">')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]  # after the header
    cells = [re.findall(r"<td[^>]*>(?:<span[^>]*>)?([^<]*)", row) for row in rows]
    assert cells == [["broker log dirs", "broker 4, broker 5, broker 6", "3"],
                     ["replica directory assignment", "topic-0", "2"], ["topic-1", "2"]]
    assert "4 in all" in table
    assert "<details><summary>all 7 item(s)</summary>" in section
    assert section.count("the same 7 item(s) as step 2 predicted") == 2  # step 3 and the change
    assert "12 snapshot(s) written" in section
    assert page == render(run_scenario(load_scenario(SUITE / "downgrade-lossy-kip778.toml")))


def test_loss_table_names_the_largest_topics_and_counts_the_rest() -> None:
    from kraftsim.image import TOPICS_SHOWN
    from kraftsim.scenario.html_report import _loss_table
    items = [f"replica directory assignment: topic t-{t} partition {p}" for t in range(15) for p in range(t + 1)]
    table = _loss_table(items)
    topics = re.findall(r"<td>(t-\d+)</td>", table)
    assert topics == [f"t-{t}" for t in range(15 - TOPICS_SHOWN, 15)]  # the largest, in name order
    rest = sum(t + 1 for t in range(15 - TOPICS_SHOWN))
    assert f"<td>and {15 - TOPICS_SHOWN} more topic(s)</td><td class=\"count\">{rest}</td>" in table
    assert f"{len(items)} in all" in table and f"all {len(items)} item(s)" in table
    brokers = _loss_table([f"broker log dirs: broker {b}" for b in range(8)])
    assert "broker 0, broker 1, broker 2, broker 3, broker 4, and 3 more</span></td><td class=\"count\">8<" in brokers


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("CI is set but chromium is not installed (.ci/run installs Debian's chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-dev-shm-usage"]


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Rows of an 8-bit RGB or RGBA PNG (what Chromium writes), unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = channels = 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, channels, rows


def test_report_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    page = tmp_path / "report.html"
    write_report(run_text(BODY), page)
    url = page.resolve().as_uri()
    dom = subprocess.run([browser, *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    c = Collect()
    c.feed(dom.stdout)
    assert c.lanes == ["1", "2", "3"] and c.steps == ["1", "2", "3", "4"]
    assert re.search(r'id="verdict">PASS<', dom.stdout)
    shot = tmp_path / "shot.png"
    proc = subprocess.run([browser, *FLAGS, f"--screenshot={shot}", "--window-size=1200,900", url],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    width, channels, rows = _png_pixels(shot.read_bytes())
    colors = {row[i:i + 3] for row in rows[::8] for i in range(0, width * channels, channels * 8)}
    assert width == 1200 and len(colors) > 20  # text, lanes, colours: not a blank page
    green = bytes((0x3a, 0x9d, 0x5d))  # the "running" colour of the lanes
    assert green in colors


#: Run in the page (a copy of the report, which itself has no script): where Chromium laid out
#: the step labels and the spans, as JSON in a <pre id="layout"> that --dump-dom prints.
PROBE = """<script>
(function () {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const svg = document.querySelector("svg.timeline");
  const out = {
    svg: box(svg),
    labels: [...svg.querySelectorAll("text.steplabel")].map(e => ({text: e.firstChild.nodeValue, box: box(e)})),
    spans: [...svg.querySelectorAll(".span")].map(e => ({kind: e.dataset.kind, node: e.dataset.node ?? null,
      step: e.dataset.step ?? null, start: Number(e.dataset.startMs), end: Number(e.dataset.endMs), box: box(e)})),
  };
  const pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""

#: A shipped scenario per planted fault, and the colour its span is drawn in.
FAULTS = {"partition-during-features-update": (0x9b, 0x72, 0xc4), "leader-crash-mid-roll": (0xd0, 0x45, 0x3a),
          "downgrade-lossy-kip778": (0xc0, 0x39, 0x2b)}


def _planted(name: str, run: RunOutcome) -> list[dict[str, object]]:
    """The spans the planted fault must have, as the DOM probe reports them."""
    steps = {st.index: st for st in run.timeline.steps}
    if name == "partition-during-features-update":  # node 1 alone from step 1 until the heal (step 4)
        cut, heal = steps[1].start_ms, steps[4].start_ms
        return [{"kind": "partition", "node": "1", "step": None, "start": cut, "end": heal},
                {"kind": "network-partition", "node": None, "step": None, "start": cut, "end": heal}]
    if name == "leader-crash-mid-roll":  # the leader crashed at step 2, started again by step 4
        (crashed,) = [s for s in run.timeline.spans(run.timeline.end_ms) if s.kind == "crashed"]
        assert steps[4].start_ms <= crashed.end_ms <= steps[4].end_ms
        return [{"kind": "crashed", "node": str(crashed.node), "step": None, "start": steps[2].start_ms,
                 "end": crashed.end_ms}]
    (res,) = [r for r in run.result.steps if r.loss_report is not None and r.error is None]  # the unsafe one
    st = steps[res.index]
    return [{"kind": "metadata-loss", "node": None, "step": str(res.index), "start": st.start_ms, "end": st.end_ms}]


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_planted_faults_drawn_in_headless_chromium(tmp_path: Path, name: str) -> None:
    """Each fault's spans exist with the right node and time range, no two step labels
    overlap (measured by Chromium, and within the width the layout estimated), and the
    screenshot shows the fault's colour. KRAFTSIM_SCREENSHOTS=DIR keeps the screenshots."""
    browser = _chromium()
    run = run_scenario(load_scenario(SUITE / f"{name}.toml"))
    page = tmp_path / "report.html"
    write_report(run, page)
    html = page.read_text(encoding="utf-8")
    assert "<script>" not in html  # the report itself runs nothing
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = subprocess.run([browser, *FLAGS, "--window-size=1200,1000", "--dump-dom", probe.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="layout">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    layout = json.loads(html_module.unescape(found[1]))
    left, top, right, bottom = layout["svg"]
    labels = layout["labels"]
    assert len(labels) == len(run.timeline.steps)
    for i, a in enumerate(labels):
        a0, a1, a2, a3 = a["box"]
        assert left <= a0 and a2 <= right and top <= a1 and a3 <= bottom, a
        assert a2 - a0 <= text_width(a["text"], bold=True), a  # the layout's estimate is an upper bound
        for b in labels[i + 1:]:
            b0, b1, b2, b3 = b["box"]
            assert a2 <= b0 or b2 <= a0 or a3 <= b1 or b3 <= a1, (a, b)  # no overlap
    for want in _planted(name, run):
        match = [s for s in layout["spans"] if {k: s[k] for k in want} == want]
        assert len(match) == 1, (want, [s for s in layout["spans"] if s["kind"] == want["kind"]])
        x0, _, x1, _ = match[0]["box"]
        assert left < x0 < x1 <= right
    shot = tmp_path / f"{name}.png"
    proc = subprocess.run([browser, *FLAGS, f"--screenshot={shot}", "--window-size=1200,1000", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    width, channels, rows = _png_pixels(shot.read_bytes())
    colors = {row[i:i + 3] for row in rows[::2] for i in range(0, width * channels, channels * 2)}
    assert len(colors) > 20 and bytes(FAULTS[name]) in colors
    keep = os.environ.get("KRAFTSIM_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / shot.name)
