"""Each pytest process of the suite keeps ACME_FILE's transfers apart (tests/conftest.py): a corpus plugin sweeping
"every file of its pid" in one xdist worker removed another worker's transfer mid-flight when they shared one."""

from __future__ import annotations

import os
from pathlib import Path


def test_this_process_keeps_acme_file_transfers_in_a_directory_of_its_own() -> None:
    from rayaccel_testplugins import acme_wired

    own = Path(os.environ["ACME_FILE_DIR"])
    assert own.parent == Path.home() / ".cache" / "rayaccel-tests" and own.name == f"acme-file-{os.getpid()}"
    assert str(own) == acme_wired.SHARED_DIR  # the plugin (and Ray workers started from here) read the same
