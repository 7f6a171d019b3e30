"""The filter plugin loads each module_utils file it wraps on first use, after
the ones that file imports (plugins/filter/v100_llm.py, _module_utils).

Each file is loaded in a fresh interpreter, as an Ansible worker process does,
without the import path conftest.py gives the other tests: a dependency the
loader does not see fails here.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FILTER = PROJECT_ROOT / "plugins" / "filter" / "v100_llm.py"
WRAPPED = re.findall(r'^_[A-Z_]+ = _Deferred\("(\w+)"\)$', FILTER.read_text(encoding="utf-8"), re.MULTILINE)

LOAD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("v100_llm", sys.argv[1])
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
plugin.FilterModule().filters()
loaded = [name for name in sys.modules if name.startswith("v100_llm_")]
assert not loaded, "loaded before any filter was called: %s" % loaded
plugin._module_utils(sys.argv[2])
"""


def test_the_plugin_wraps_the_module_utils_it_names():
    assert len(WRAPPED) >= 14


@pytest.mark.parametrize("name", WRAPPED)
def test_each_wrapped_file_loads_alone_in_a_fresh_interpreter(name, tmp_path):
    result = subprocess.run([sys.executable, "-c", LOAD, str(FILTER), name], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_a_file_that_does_not_load_is_reported_as_such_not_as_bad_input(tmp_path):
    plugin_dir = tmp_path / "plugins" / "filter"
    utils_dir = tmp_path / "plugins" / "module_utils"
    plugin_dir.mkdir(parents=True)
    utils_dir.mkdir(parents=True)
    (plugin_dir / "v100_llm.py").write_text(FILTER.read_text(encoding="utf-8"), encoding="utf-8")
    (utils_dir / "broken.py").write_text("raise ValueError('a bug, not bad input')\n", encoding="utf-8")
    script = LOAD.replace("plugin._module_utils(sys.argv[2])", """
try:
    plugin._module_utils(sys.argv[2])
except RuntimeError as exc:
    assert "plugins/module_utils/broken.py did not load" in str(exc), exc
else:
    raise SystemExit("no RuntimeError")
""")
    result = subprocess.run([sys.executable, "-c", script, str(plugin_dir / "v100_llm.py"), "broken"],
                            cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr + result.stdout
