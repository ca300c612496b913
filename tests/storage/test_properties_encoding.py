"""meta.properties and server.properties are read as Java's Properties.load(InputStream)
reads them: ISO-8859-1 with \\uXXXX escapes; a UTF-16 file is an error, never a default."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.errors import KraftsimError
from kraftsim.storage import read_meta_properties, read_server_config

META = ("#\n#Wed Jan 01 00:00:00 UTC 2025\ncluster.id=h1CtT2YxRtilk1X_2jpd8Q\ndirectory.id=LRbb8UNm23VTyrrBxCNEGA\n"
        "node.id=1\nversion=1\n")


def test_latin_1_and_escapes_read_as_java_reads_them(tmp_path: Path) -> None:
    f = tmp_path / "meta.properties"
    f.write_bytes((META + "owner=caf\u00e9 \\u00e9\\u4e2d\n").encode("latin-1"))
    assert read_meta_properties(f).properties["owner"] == "caf\u00e9 \u00e9\u4e2d"
    f.write_bytes((META + "owner=caf\u00e9\n").encode("utf-8"))  # UTF-8 bytes: Java sees two Latin-1 characters
    assert read_meta_properties(f).properties["owner"] == "caf\u00c3\u00a9"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_utf_16_file_is_an_error(tmp_path: Path, encoding: str) -> None:
    f = tmp_path / "meta.properties"
    f.write_bytes(META.encode(encoding))
    with pytest.raises(KraftsimError, match=f"{f}: .*UTF-16"):
        read_meta_properties(f)
    s = tmp_path / "server.properties"
    s.write_bytes("process.roles=controller\nnode.id=1\n".encode(encoding))
    with pytest.raises(KraftsimError, match="UTF-16"):
        read_server_config(s)



@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_config_file_that_never_ends_is_refused() -> None:
    """`kafka-storage format -c /dev/zero` read until memory ran out (exit 70); only so much is
    read now. In a process under a memory cap, so that without the bound it fails fast."""
    import os
    import resource
    import subprocess
    import sys

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run([sys.executable, "-m", "kraftsim", "storage", "info", "-c", "/dev/zero"],
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, capture_output=True, text=True,
                          timeout=120, preexec_fn=capped)
    assert proc.returncode == 1, proc.stderr
    assert "/dev/zero: more than 16,777,216 bytes: not a server.properties file kraftsim reads" in proc.stdout + proc.stderr
