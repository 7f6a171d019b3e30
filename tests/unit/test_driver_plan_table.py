"""docs/DRIVER_PLAN.md is what scripts/driver-plan-table prints from the data the roles use."""
from __future__ import annotations

import subprocess
import sys

from conftest import PROJECT_ROOT


def test_the_committed_table_is_current():
    printed = subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "driver-plan-table")],
                             check=True, capture_output=True, text=True).stdout
    committed = (PROJECT_ROOT / "docs" / "DRIVER_PLAN.md").read_text()
    assert committed == printed, "run: scripts/driver-plan-table > docs/DRIVER_PLAN.md"
