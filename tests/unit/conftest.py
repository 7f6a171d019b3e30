"""Make the project importable as the collection v100.llm, as Ansible finds it.

Plugins import each other as ``ansible_collections.v100.llm.plugins...``; the
collection is collections/ansible_collections/v100/llm, a link to the
repository (ansible.cfg's collections_path). Putting collections/ on sys.path
makes the same imports work under pytest.
"""
from __future__ import annotations

import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
RECORDED = FIXTURES / "recorded"

sys.path.insert(0, str(PROJECT_ROOT / "collections"))
