"""What the Citus test modules share: ``scripts/citus.sh``, its patience, and when they run.

They are opt-in (``MNEIA_CITUS=1``; .ci/run's Citus stage sets it): the first ``up`` builds
Citus from source, under a minute on two idle cores, about ten when busy, cached afterwards
under ``~/.cache/mneia/citus``. Each module runs a cluster of its own, in its own state
directory (``MNEIA_CITUS_DIR``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "citus.sh"
BUILD_TIMEOUT = 1800  # a cold `up` builds Citus first: under a minute idle, ~10 minutes when busy
TIMEOUT = 300

ASKED = pytest.mark.skipif(
    os.environ.get("MNEIA_CITUS") != "1",
    reason=(
        "set MNEIA_CITUS=1 to run the Citus tests; scripts/citus.sh builds Citus first and needs a"
        " C compiler and the build dependencies: apt-get install -y build-essential liblz4-dev"
        " libzstd-dev (under a minute on 2 idle cores, ~10 minutes when busy)"
    ),
)
"""The mark of every Citus test module: skipped, saying what it needs, unless asked for."""


def run(*args: str, state: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``scripts/citus.sh ARGS`` on the cluster kept in ``state``, whatever its outcome."""
    env = {**os.environ, "MNEIA_CITUS_DIR": str(state)}
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout)


def output(*args: str, state: Path, timeout: float = TIMEOUT) -> str:
    """``scripts/citus.sh ARGS``, which must succeed: its stdout."""
    result = run(*args, state=state, timeout=timeout)
    assert result.returncode == 0, f"citus.sh {' '.join(args)}: {result.stderr}"
    return result.stdout
