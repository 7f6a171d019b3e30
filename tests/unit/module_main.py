"""A module's main() run in-process, as Ansible runs it: its exit code and the JSON it prints."""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Tuple

import pytest
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args


def run_main(capsys, main: Callable[[], None], args: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
    # Ansible keeps module warnings in a process-wide dict: each run starts it empty.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ansible_warnings, "_global_warnings", {})
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exit_info:
                main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def emitted_warnings(result: Dict[str, Any]) -> List[str]:
    """ansible-core 2.19 returns module.warn() messages as WarningSummary dicts."""
    return [warning["event"]["msg"] for warning in result.get("warnings", [])]
