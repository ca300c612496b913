"""The protocol schemas ship with the package: setuptools' build step (what a wheel is made
of) copies every kraftsim/wire/messages/*.toml, and the copied tree loads the same APIs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kraftsim.wire.codec import messages_dir
from tests.paths import REPO


def test_build_copies_every_message_schema(tmp_path: Path) -> None:
    out = tmp_path / "build"
    run = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(out)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    shipped = sorted(p.name for p in (out / "kraftsim" / "wire" / "messages").glob("*.toml"))
    assert shipped == sorted(p.name for p in messages_dir().glob("*.toml"))
    assert len(shipped) == 78  # (DeleteRecords and DescribeProducers added)
    check = ("import kraftsim.wire as w; assert w.API_KEYS['ApiVersions'] == 18; "
             "print(w.default_catalog().request_header.name, w.__file__)")
    loaded = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env={"PYTHONPATH": str(out)},
                            capture_output=True, text=True, timeout=120)
    # The built tree has no C extension: the codec runs on its generated Python code.
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    name, where = loaded.stdout.split()
    assert name == "RequestHeader" and Path(where).is_relative_to(out)
