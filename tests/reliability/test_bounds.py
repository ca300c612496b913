"""Small inputs never cause unbounded work: a compressed batch that would expand to gigabytes
is refused at once, under a memory cap, by every command that reads it."""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

import cramjam
import pytest

from kraftsim.errors import CorruptRecordException
from kraftsim.protocol import compression
from kraftsim.protocol.batch import crc32c

GIB = 1024 * 1024 * 1024
CHUNK = 16 * 1024 * 1024


def _batch(records: bytes, count: int, codec: int) -> bytes:
    after_crc = struct.pack(">hiqqqhii", codec, count - 1, 5, 5, -1, -1, -1, count) + records
    return struct.pack(">qiibI", 0, len(after_crc) + 9, 0, 2, crc32c(after_crc)) + after_crc


def _bomb(codec: int, expands_to: int) -> bytes:
    """A records section of `codec` that expands to `expands_to` zero bytes (concatenated frames)."""
    if codec == compression.GZIP:
        import gzip
        member = gzip.compress(b"\0" * CHUNK, mtime=0)
    elif codec == compression.ZSTD:
        member = bytes(cramjam.zstd.compress(b"\0" * CHUNK))
    else:
        raise AssertionError(codec)
    return member * (expands_to // CHUNK)


@pytest.mark.parametrize("codec", [compression.GZIP, compression.ZSTD, compression.LZ4, compression.SNAPPY])
def test_decompression_stops_at_the_limit(codec: int) -> None:
    data = compression.compress(codec, b"\0" * (compression.MAX_DECOMPRESSED_BYTES + 1))
    with pytest.raises(CorruptRecordException, match="expand to more than 67,108,864 bytes"):
        compression.decompress(codec, data)
    small = b"record" * 1000
    assert compression.decompress(codec, compression.compress(codec, small)) == small


def _capped(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize("codec", [compression.ZSTD, compression.GZIP])
def test_a_compression_bomb_fails_fast_under_a_memory_cap(tmp_path: Path, codec: int) -> None:
    log_dir = tmp_path / "__cluster_metadata-0"
    log_dir.mkdir()
    segment = log_dir / "00000000000000000000.log"
    segment.write_bytes(_batch(_bomb(codec, 4 * GIB), 1000, codec))
    assert segment.stat().st_size < 5 * 1024 * 1024
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for argv in (["log", "verify", str(segment)], ["log", "dump", "--json", str(segment)], ["replay", str(log_dir)],
                 ["export", str(log_dir), "-o", str(tmp_path / "out.parquet")]):
        proc = subprocess.run([sys.executable, "-m", "kraftsim", *argv], env=env, capture_output=True, text=True,
                              timeout=300, preexec_fn=lambda: _capped(2 * GIB))
        assert proc.returncode in (1, 2), (argv, proc.returncode, proc.stderr[-2000:])
        assert "expand to more than" in proc.stdout + proc.stderr, (argv, proc.stdout[-500:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr


HEAD = """name = "big"
[cluster]
controllers = 1
brokers = 1
release = "3.8"
"""


def _scenario(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str) -> tuple[int, str, str]:
    from tests.cli_support import run

    f = tmp_path / "s.toml"
    f.write_text(text)
    return run(capsys, "scenario", "run", str(f))


@pytest.mark.parametrize("body, limit", [
    ('[[step]]\nop = "run"\nms = 1000000000000000\n', "step_ms"),
    ('[[step]]\nop = "wait"\ntimeout_ms = 3600001\n', "step_ms"),
    ('[[step]]\nop = "heal"\n' * 1001, "steps"),
    ('[[step]]\nop = "create-topics"\ncount = 600000\n' * 2, "topics"),
    ('[[step]]\nop = "create-topics"\ncount = 10\npartitions = 600000\n' * 2, "partitions"),
])
def test_scenario_work_is_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, limit: str) -> None:
    code, out, err = _scenario(capsys, tmp_path, HEAD + body)
    assert code == 2, err
    assert f"[limits] {limit}" in err and "raise it" in err
    assert out == ""  # refused before anything ran


def test_a_file_may_raise_its_limits(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _scenario(capsys, tmp_path, HEAD + '[limits]\nstep_ms = 7200000\n[[step]]\nop = "run"\nms = 3600001\n')
    assert code == 0, err


@pytest.mark.parametrize("text", [
    "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "x = " + "{a = " * 200 + "1" + "}" * 200 + "\n",
    ".".join(["a"] * 100_000) + " = 1\n",
    "[" + ".".join(["t"] * 1000) + "]\n",
    "x = '" + "a" * (5 * 1024 * 1024) + "'\n",
])
def test_toml_is_checked_before_it_is_parsed(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str) -> None:
    code, out, err = _scenario(capsys, tmp_path, text)
    assert code == 2, err
    assert "kraftsim reads" in err and len(err) < 1000


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_toml_input_that_never_ends_is_refused_under_a_memory_cap(tmp_path: Path) -> None:
    """A scenario, catalog or record schema file is read only up to the size kraftsim parses:
    /dev/zero (or an endless pipe) used to be read whole, until memory ran out. A catalog or a
    record schema that is not a regular file is now refused before it is opened."""
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "x.toml").symlink_to("/dev/zero")
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # A catalog or a record schema must be a regular file: those are refused before they are
    # opened (a FIFO would block the open), the scenario is read up to the cap.
    for argv, says in ((["scenario", "check", "/dev/zero"], "more than the 4,194,304 bytes of TOML kraftsim reads"),
                       (["storage", "version-mapping", "--catalog", "/dev/zero"], "/dev/zero: cannot read it: not a regular file"),
                       (["log", "dump", "--schemas", str(schemas), str(segment)], "x.toml: cannot read: not a regular file")):
        proc = subprocess.run([sys.executable, "-m", "kraftsim", *argv], env=env, capture_output=True, text=True,
                              timeout=120, preexec_fn=lambda: _capped(GIB))
        assert proc.returncode in (1, 2), (argv, proc.returncode, proc.stderr[-2000:])
        assert says in proc.stderr, (argv, proc.stderr[-2000:])


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_other_inputs_that_never_end_are_refused_under_a_memory_cap(tmp_path: Path) -> None:
    """`conformance table` read its file whole and `metadata-quorum --command-config` the new
    controller's properties: /dev/zero ran either out of memory (killed). A scenario folder
    with a FIFO among its *.toml files waited for a writer forever."""
    from kraftsim.cli.main import main as kraftsim_main

    cluster = tmp_path / "c"
    assert kraftsim_main(["cluster", "create", str(cluster), "--controllers", "1", "--release", "4.1",
                          "--dynamic-quorum"]) == 0
    folder = tmp_path / "scenarios"
    folder.mkdir()
    os.mkfifo(folder / "a.toml")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for argv, code, says in (
            (["conformance", "table", "/dev/zero"], 2, "/dev/zero: more than the 67,108,864 bytes of outcomes"),
            (["metadata-quorum", "--cluster", str(cluster), "--command-config", "/dev/zero", "add-controller"], 1,
             "/dev/zero (not a regular file)"),
            (["scenario", "run", str(folder)], 2, "a.toml: not a regular file (a FIFO would be waited on forever")):
        proc = subprocess.run([sys.executable, "-m", "kraftsim", *argv], env=env, capture_output=True, text=True,
                              timeout=120, preexec_fn=lambda: _capped(GIB))
        assert proc.returncode == code, (argv, proc.returncode, proc.stderr[-2000:])
        assert says in proc.stderr and "Traceback" not in proc.stderr, (argv, proc.stderr[-2000:])


def test_the_toml_check_lets_real_files_through() -> None:
    from kraftsim import tomlinput

    repo = Path(__file__).resolve().parents[2]
    for f in [*repo.glob("scenarios/**/*.toml"), *repo.glob("records/*.toml"), *repo.glob("kraftsim/**/*.toml")]:
        tomlinput.loads(f.read_text(encoding="utf-8"))
    assert tomlinput.loads('a = "[[[[" # [[[[\nb.c = 1.5\n[d.e]\nf = [1.5, {g = "}"}]\n') == {
        "a": "[[[[", "b": {"c": 1.5}, "d": {"e": {"f": [1.5, {"g": "}"}]}}}


def _many(kind: str, n: int) -> str:
    """A catalog adding `n` entries of `kind` (valid ones: only the count may be refused)."""
    if kind == "metadata_versions":
        return "metadata_versions = [" + ", ".join(f'{{level = {35 + i}, version = "9.{i}-IV0", metadata_changed = false}}'
                                                   for i in range(n)) + "]\n"
    if kind == "releases":
        return '[[releases]]\nname = "9.0.0"\ninherits = "4.4.0"\npatches = [' + ", ".join(
            f'"9.0.{i}"' for i in range(1, n)) + "]\n"
    return "".join(f'[[features]]\nname = "f{i}.version"\nlevels = [{{ level = 0, bootstrap = "3.3-IV3" }}]\n'
                   for i in range(n))


@pytest.mark.parametrize("kind, n", [("metadata_versions", 50_000), ("releases", 100_000), ("features", 20_000)])
def test_catalog_sizes_are_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, n: int) -> None:
    """Absurd entry counts are refused (exit 2) by the scenario's `catalog` and by `--catalog`,
    naming the limit and how to raise it, before the catalog is checked."""
    from tests.cli_support import run

    cat = tmp_path / "big.toml"
    cat.write_text(_many(kind, n))
    code, out, err = _scenario(capsys, tmp_path, HEAD.replace("[cluster]", 'catalog = "big.toml"\n\n[cluster]', 1)
                               + '[[step]]\nop = "heal"\n')
    assert code == 2 and out == "", err
    assert f"{n:,}" in err and f"[limits] {kind}" in err and "raise it" in err
    for argv in (["features", "--catalog", str(cat), "describe"],
                 ["cluster", "create", str(tmp_path / "c"), "--controllers", "1", "--release", "3.9", "--catalog", str(cat)]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and f"[limits] {kind}" in err, (argv, code, err)
    assert not (tmp_path / "c").exists()


def test_a_catalog_may_raise_its_limits() -> None:
    from kraftsim.versions import load_catalog_text
    from kraftsim.versions.errors import CatalogError
    from kraftsim.versions.loader import CATALOG_LIMITS

    over = CATALOG_LIMITS["features"] + 1
    with pytest.raises(CatalogError, match=r"\[limits\] features"):
        load_catalog_text(_many("features", over))
    load_catalog_text(f"[limits]\nfeatures = {over}\n" + _many("features", over))  # accepted as a whole
    with pytest.raises(CatalogError, match="unknown key limits.feature "):
        load_catalog_text("[limits]\nfeature = 1\n")


def _data_capped(limit: int) -> None:
    """A cap on the process's own memory (heap and private maps), not on file maps it reads through."""
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def test_a_huge_segment_is_walked_without_being_read_into_memory(tmp_path: Path) -> None:
    """`log verify`, `log dump`, `export` and `replay` of a segment hold one batch at a time
    (replay: its sound batches): a segment of several gigabytes (here a real segment followed by a 4 GiB run
    of zeros, where the framing is lost) is reported on under a 768 MiB cap on the process's own
    memory. They used to read the whole file first."""
    from tests.reliability import damage

    log_dir = damage.build_log_dir(tmp_path / "log")
    segment = next(log_dir.glob("*.log"))
    sound = segment.stat().st_size
    with open(segment, "r+b") as f:
        f.truncate(sound + 4 * GIB)  # sparse: costs no disk
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # (replay refuses a damaged log as invalid input, exit 2; the log tools report damage, exit 1)
    for argv, code in ((["log", "verify", str(segment)], 1), (["log", "dump", str(segment)], 1),
                       (["replay", str(segment)], 2),
                       (["export", str(segment), "-o", str(tmp_path / "out.parquet")], 1)):
        proc = subprocess.run([sys.executable, "-m", "kraftsim", *argv], env=env, capture_output=True, text=True,
                              timeout=300, preexec_fn=lambda: _data_capped(768 * 1024 * 1024))
        assert proc.returncode == code, (argv, proc.returncode, proc.stderr[-2000:])
        said = proc.stdout + proc.stderr
        assert f"position {sound}: Record batch is corrupt (the size 12 is smaller than the minimum" in said, \
            (argv, said[-2000:])
        assert "Traceback" not in proc.stderr and "MemoryError" not in said


def test_json_nested_past_the_recursion_limit_is_refused_as_invalid_json() -> None:
    """Every reader of kraftsim's JSON files catches ValueError alone: nesting deeper than the
    decoder can recurse must come as one too, not as a RecursionError (an internal error)."""
    from kraftsim import jsoninput

    deep = "[" * (sys.getrecursionlimit() * 4) + "]" * (sys.getrecursionlimit() * 4)
    with pytest.raises(ValueError, match="nested too deeply"):
        jsoninput.loads(deep)
    with pytest.raises(ValueError):
        jsoninput.loads(b"{not json")
    assert jsoninput.loads(b'{"a": [[1]]}') == {"a": [[1]]}


def test_a_fifo_named_as_a_scenario_or_server_config_that_nobody_writes_to_is_refused_in_bounded_time(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A file named on its own may be a pipe (`<(...)`), so a FIFO is read; one that no process
    writes to waited in its open forever (`scenario check`, `scenario run`, `storage info --config`)."""
    import time

    from kraftsim import regular_file
    from tests.cli_support import fifo_unblocked_after, run

    monkeypatch.setattr(regular_file, "PIPE_WAIT_S", 0.2)
    fifo = tmp_path / "s.toml"
    os.mkfifo(fifo)
    for argv, code in ((["scenario", "check", str(fifo)], 2), (["scenario", "run", str(fifo)], 2),
                       (["storage", "info", "--config", str(fifo)], 1)):
        started = time.monotonic()
        with fifo_unblocked_after(fifo):  # (were the open to wait again, the test fails after 10 s)
            got, _, err = run(capsys, *argv)
        assert (got, time.monotonic() - started < 10) == (code, True), (argv, err)
        assert f"{fifo}" in err and "a pipe nothing was written to in 0.2 s" in err, (argv, err)


def test_a_fifo_a_writer_fills_late_is_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What `<(...)` gives: a pipe whose writer is slower than the reader's open."""
    import threading
    import time

    from tests.cli_support import run

    fifo = tmp_path / "s.toml"
    os.mkfifo(fifo)
    text = (Path(__file__).resolve().parents[2] / "scenarios" / "disable-feature.toml").read_bytes()

    def write() -> None:
        time.sleep(0.3)
        with open(fifo, "wb") as f:  # (blocks until the reader has it open)
            f.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    code, out, err = run(capsys, "scenario", "check", str(fifo))
    writer.join(timeout=10)
    assert code == 0 and "ok: scenario disable-feature" in out, err


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_cluster_state_file_that_is_a_fifo_or_a_device_is_refused_not_read(tmp_path: Path) -> None:
    """topics, features and configs read --cluster's cluster.json straight away: a FIFO there
    waited forever, a link to /dev/zero ran out of memory."""
    fifo, device = tmp_path / "fifo", tmp_path / "device"
    for d in (fifo, device):
        d.mkdir()
    os.mkfifo(fifo / "cluster.json")
    (device / "cluster.json").symlink_to("/dev/zero")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for d in (fifo, device):
        for argv in (["topics", "--cluster", str(d), "list"], ["features", "--cluster", str(d), "describe"]):
            proc = subprocess.run([sys.executable, "-m", "kraftsim", *argv], env=env, capture_output=True, text=True,
                                  timeout=60, preexec_fn=lambda: _capped(GIB))
            assert (proc.returncode, proc.stderr) == (1, f"{d / 'cluster.json'}: not a regular file\n"), argv
