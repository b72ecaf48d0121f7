"""Data on disk is the owner's alone: a data directory from before is tightened once, new files are 0600."""

from __future__ import annotations

import os
import pathlib
import stat
import subprocess
import sys

from services.runtime.data_dir import MARKER, make_private


def _mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_existing_data_directory_is_made_private_once(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    (data / "rag" / "originals").mkdir(parents=True, mode=0o755)
    for directory in (data, data / "rag", data / "rag" / "originals"):
        directory.chmod(0o755)
    document = data / "rag" / "originals" / "ab12"
    document.write_bytes(b"a tenant's document")
    document.chmod(0o644)
    (data / "rag" / "link").symlink_to(document)

    assert make_private(data) == 4
    assert {_mode(p) for p in (data, data / "rag", data / "rag" / "originals")} == {0o700}
    assert _mode(document) == 0o600 and (data / MARKER).exists()
    document.chmod(0o644)  # once done, the walk is not repeated (the umask keeps new files private)
    assert make_private(data) == 0 and _mode(document) == 0o644


def test_a_mesh_process_creates_private_files(tmp_path: pathlib.Path) -> None:
    script = ("import pathlib, sys; from services.runtime.data_dir import private_umask; private_umask(); "
              "d = pathlib.Path(sys.argv[1]) / 'new'; d.mkdir(); (d / 'f').write_text('x')")
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, env={**os.environ})
    assert (_mode(tmp_path / "new"), _mode(tmp_path / "new" / "f")) == (0o700, 0o600)
