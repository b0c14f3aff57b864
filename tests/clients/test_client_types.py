"""The client package type-checks under `mypy --strict` (its pyproject's [tool.mypy]), so a
job that runs mypy on its own code gets the client's real types, not Any."""

import os
import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_the_client_package_is_mypy_strict_clean():
    # From the client's directory, so mypy reads the client's pyproject (strict = true) and
    # checks the worktree's source rather than whichever copy is installed.
    found = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", os.devnull, "src/goldset_client"],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0, found.stdout + found.stderr
    assert (CLIENT / "src" / "goldset_client" / "py.typed").exists(), "without py.typed a user's mypy ignores the types"
