"""A seeded corpus of damaged copies of real Kafka files and kraftsim-written ones.

Every case damages one file of a copy of a metadata directory (bit flips, truncation at
every byte of the last batch, zeroed ranges, duplicated, swapped and removed batches,
rewritten offsets and lengths with the CRC recomputed, renamed files, empty and footless
checkpoints) and runs `kraftsim log verify` on the directory, in this process. For every
case: no traceback (no internal error), no hang (each run has a deadline), the input is
left exactly as it was, and the damage is reported (exit 1).
"""

from __future__ import annotations

import hashlib
import random
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from kraftsim.cli.main import main
from kraftsim.storage.view import iter_segment_batches
from tests.conftest import ORACLE
from tests.reliability import damage

SEED = 1717
#: What `replay` is given for a source: its directory, or for a lone bootstrap file the file
#: (a folder holding bootstrap.checkpoint is a log directory still to be formatted).
REPLAY_FILE = {"kafka-4.2-bootstrap": "bootstrap.checkpoint"}
DEADLINE_S = 30
ORACLE_DIRS = {  # small real directories: a log with two epochs, a snapshot, a bootstrap file
    "kafka-3.8": ORACLE / "kafka-3.8.0_codecrafters" / "__cluster_metadata-0",
    "cp-kafka-3.6-snapshot": ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0" /
    "00000000000000007752-0000000001.checkpoint",
    "kafka-4.2-bootstrap": ORACLE / "kafka-4.2_induswargods" / "bootstrap.checkpoint",
}


@dataclass(frozen=True)
class Case:
    source: str
    file: str  # the damaged file, by name inside the directory
    what: str
    change: Callable[[Path], None]  # damages the copy of the directory

    @property
    def id(self) -> str:
        return f"{self.source}/{self.file}/{self.what}"


def _rewrite(name: str, edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def change(d: Path) -> None:
        p = d / name
        p.chmod(0o644)
        p.write_bytes(edit(p.read_bytes()))
    return change


def _rename(name: str, new: str) -> Callable[[Path], None]:
    return lambda d: (d / name).rename(d / new)


def cases_for(source: str, d: Path, rng: random.Random) -> Iterator[Case]:
    """The damage of every kind to every metadata file of directory `d`."""
    files = sorted(p for p in d.iterdir() if p.suffix in (".log", ".checkpoint"))
    for path in files:
        name, data = path.name, path.read_bytes()
        batches = damage.slices(data)
        snapshot = path.suffix == ".checkpoint"

        def case(what: str, edit: Callable[[bytes], bytes]) -> Iterator[Case]:
            if edit(data) != data:
                yield Case(source, name, what, _rewrite(name, edit))

        for _ in range(6):
            pos, bit = rng.randrange(len(data)), rng.randrange(8)
            yield from case(f"bit {bit} of byte {pos}", lambda b, pos=pos, bit=bit: damage.flip_bit_at(b, pos, bit))
        last = batches[-1]
        for cut in range(last.position + 1, len(data)):
            yield from case(f"cut at {cut}", lambda b, cut=cut: b[:cut])
        for k in range(3):
            seed = rng.randrange(1 << 30)
            yield from case(f"zeroed range {k}", lambda b, seed=seed: damage.zero_range(b, random.Random(seed)))
        if len(batches) >= 2:
            i = rng.randrange(len(batches) - 1)
            yield from case(f"batch {i} duplicated", lambda b, i=i: damage.duplicate_batch(b, i))
            yield from case(f"batches {i}, {i + 1} swapped", lambda b, i=i: damage.swap_batches(b, i))
            j = rng.randrange(len(batches))
            if not (j == len(batches) - 1 and not snapshot):  # dropping a log's last batch leaves a valid, shorter log
                yield from case(f"batch {j} removed", lambda b, j=j: damage.remove_batch(b, j))
        i = rng.randrange(len(batches))
        base = batches[i].base_offset
        for new in (base + 1, base - 1, base + 1000):
            if new >= 0:
                yield from case(f"batch {i} base offset {new}", lambda b, i=i, new=new: damage.set_base_offset(b, i, new))
        for delta in (+1, -1):
            yield from case(f"batch {i} lastOffsetDelta {delta:+d}, CRC recomputed",
                            lambda b, i=i, delta=delta: damage.set_last_offset_delta(
                                b, i, damage.last_offset_delta(b, i) + delta))
        for delta in (+1, -1, +1000):
            yield from case(f"batch {i} length {delta:+d}", lambda b, i=i, delta=delta: damage.set_length(b, i, delta))
        if snapshot:
            yield from case("empty", lambda b: b"")
            yield from case("footless", lambda b: b[:damage.slices(b)[-1].position])
            if name != "bootstrap.checkpoint":
                end, epoch = int(name[:20]), int(name[21:31])
                yield Case(source, name, "renamed to another epoch",
                           _rename(name, f"{end:020d}-{epoch + 1:010d}.checkpoint"))
                earlier = _earlier_batch_end(d, end, epoch)
                if earlier is not None:  # every name check passes: only the log's replay tells
                    yield Case(source, name, "renamed to an earlier batch end of its epoch",
                               _rename(name, f"{earlier:020d}-{epoch:010d}.checkpoint"))
        else:
            base_name = int(name[:20])
            yield Case(source, name, "renamed to a higher offset", _rename(name, f"{base_name + 3:020d}.log"))
            if base_name > 0:
                yield Case(source, name, "renamed to a lower offset", _rename(name, f"{base_name - 1:020d}.log"))


def _earlier_batch_end(d: Path, end: int, epoch: int) -> int | None:
    """The end of a log batch of `epoch` before `end`, seeded away from it, if the log has one."""
    ends = [fb.batch.last_offset + 1 for fb in iter_segment_batches(d)
            if fb.batch.partition_leader_epoch == epoch and fb.batch.last_offset + 1 < end] if any(
        p.suffix == ".log" for p in d.iterdir()) else []
    return ends[len(ends) // 2] if ends else None


def sources(tmp: Path) -> dict[str, Path]:
    """Directories to damage: one written by kraftsim, and small real ones when the oracle is there."""
    out = {"kraftsim": damage.build_log_dir(tmp / "kraftsim")}
    for name, src in ORACLE_DIRS.items():
        if not src.exists():
            continue
        d = tmp / name / "__cluster_metadata-0"
        if src.is_dir():
            shutil.copytree(src, d)
        else:
            d.mkdir(parents=True)
            shutil.copyfile(src, d / src.name)
        out[name] = d
    return out


def fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


class Deadline:
    """A run that takes longer than `seconds` raises TimeoutError (a hang is a failure)."""

    def __init__(self, seconds: int):
        self.seconds = seconds

    def __enter__(self) -> None:
        def expire(signum: int, frame: object) -> None:
            raise TimeoutError(f"no answer within {self.seconds} s")
        self._old = signal.signal(signal.SIGALRM, expire)
        signal.alarm(self.seconds)

    def __exit__(self, *exc: object) -> None:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self._old)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with Deadline(DEADLINE_S):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], list[Case]]:
    tmp = tmp_path_factory.mktemp("sources")
    srcs = sources(tmp)
    rng = random.Random(SEED)
    return srcs, [c for name, d in srcs.items() for c in cases_for(name, d, rng)]


def test_every_source_is_whole_before_it_is_damaged(corpus: tuple[dict[str, Path], list[Case]],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The control: undamaged, each source verifies and replays clean (so the refusals below
    are the damage's doing)."""
    srcs, _ = corpus
    for name, d in srcs.items():
        assert run_cli(capsys, "log", "verify", str(d))[0] == 0, name
        code, out, err = run_cli(capsys, "replay", str(d / REPLAY_FILE.get(name, "")), "--roundtrip", "none")
        assert code == 0, (name, err[-500:])
        assert "recovery: " not in out + err and "PARTIAL" not in out + err


def test_the_corpus_is_large_and_covers_every_kind(corpus: tuple[dict[str, Path], list[Case]]) -> None:
    _, cases = corpus
    assert len(cases) >= 200
    kinds = {c.what.split(" ")[0] for c in cases}
    assert {"bit", "cut", "zeroed", "batch", "batches", "renamed", "empty", "footless"} <= kinds


def test_verify_reports_every_damaged_input(corpus: tuple[dict[str, Path], list[Case]], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    srcs, cases = corpus
    missed, crashed, modified = [], [], []
    for n, case in enumerate(cases):
        d = tmp_path / str(n) / srcs[case.source].name
        shutil.copytree(srcs[case.source], d)
        case.change(d)
        before = fingerprint(d)
        code, out, err = run_cli(capsys, "log", "verify", str(d))
        if code == 70 or "Traceback" in out + err:
            crashed.append((case.id, err[-500:]))
        elif code != 1:
            missed.append((case.id, out[-800:]))
        if fingerprint(d) != before:
            modified.append(case.id)
        shutil.rmtree(d.parent)
    assert not crashed, crashed[:5]
    assert not modified, modified[:5]
    assert not missed, f"{len(missed)} of {len(cases)} damaged inputs reported OK: {missed[:5]}"


REPLAY_CUTS = 40  # replay is slower than verify: every other kind of damage, and a seeded sample of the cuts


def _last_segment(srcs: dict[str, Path], case: Case) -> bool:
    segments = sorted(p.name for p in srcs[case.source].iterdir() if p.suffix == ".log")
    return bool(segments) and case.file == segments[-1]


def test_replay_never_presents_a_damaged_log_as_whole(corpus: tuple[dict[str, Path], list[Case]], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`replay` refuses every damaged input (exit 1 or 2), except a torn end of the log's last
    segment, which it may load as Kafka's recovery does, saying so in a `recovery:` line."""
    srcs, cases = corpus
    rng = random.Random(SEED + 1)
    cuts = [c for c in cases if c.what.startswith("cut ")]
    chosen = [c for c in cases if not c.what.startswith("cut ")] + rng.sample(cuts, min(REPLAY_CUTS, len(cuts)))
    missed, crashed, modified = [], [], []
    for n, case in enumerate(chosen):
        d = tmp_path / str(n) / srcs[case.source].name
        shutil.copytree(srcs[case.source], d)
        case.change(d)
        before = fingerprint(d)
        code, out, err = run_cli(capsys, "replay", str(d / REPLAY_FILE.get(case.source, "")), "--roundtrip", "none")
        if code == 70 or "Traceback" in out + err:
            crashed.append((case.id, err[-500:]))
        elif code == 0 and not (_last_segment(srcs, case) and "recovery: " in out + err):
            missed.append((case.id, (out + err)[-600:]))
        if fingerprint(d) != before:
            modified.append(case.id)
        shutil.rmtree(d.parent)
    assert not crashed, crashed[:5]
    assert not modified, modified[:5]
    assert not missed, f"{len(missed)} of {len(chosen)} damaged inputs replayed as whole: {missed[:4]}"
