"""Make the project's plugins importable the way Ansible loads them.

Modules import shared code as ``ansible.module_utils.<name>``; Ansible resolves
that from the ``module_utils`` path in ansible.cfg. Here we append
plugins/module_utils to that package's search path so the same imports work
under pytest without a collection layout.
"""
from __future__ import annotations

import sys
from pathlib import Path

import ansible.module_utils

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
RECORDED = FIXTURES / "recorded"

ansible.module_utils.__path__.append(str(PROJECT_ROOT / "plugins" / "module_utils"))
sys.path.insert(0, str(PROJECT_ROOT / "plugins" / "modules"))
