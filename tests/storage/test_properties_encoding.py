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
