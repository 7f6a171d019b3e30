"""The filter plugin imports each module_utils file it wraps on first use, by its collection path.

Each file is imported in a fresh interpreter, as an Ansible worker process
does, with only the collection on the import path: a dependency missing from
the collection fails here.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FILTER = PROJECT_ROOT / "plugins" / "filter" / "v100_llm.py"
WRAPPED = re.findall(r'^_[A-Z_]+ = _Deferred\("(\w+)"\)$', FILTER.read_text(encoding="utf-8"), re.MULTILINE)
UTILS = "ansible_collections.v100.llm.plugins.module_utils."

LOAD = """
import sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.v100.llm.plugins.filter import v100_llm as plugin
plugin.FilterModule().filters()
loaded = [name for name in sys.modules if name.startswith("%s")]
assert not loaded, "loaded before any filter was called: %%s" %% loaded
plugin._module_utils(sys.argv[2])
""" % UTILS


def test_the_plugin_wraps_the_module_utils_it_names():
    assert len(WRAPPED) >= 14


@pytest.mark.parametrize("name", WRAPPED)
def test_each_wrapped_file_loads_alone_in_a_fresh_interpreter(name, tmp_path):
    result = subprocess.run([sys.executable, "-c", LOAD, str(PROJECT_ROOT / "collections"), name], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_a_file_that_does_not_load_is_reported_as_such_not_as_bad_input(tmp_path):
    collection = tmp_path / "ansible_collections" / "v100" / "llm" / "plugins"
    (collection / "filter").mkdir(parents=True)
    (collection / "module_utils").mkdir(parents=True)
    (collection / "filter" / "v100_llm.py").write_text(FILTER.read_text(encoding="utf-8"), encoding="utf-8")
    (collection / "module_utils" / "broken.py").write_text("raise ValueError('a bug, not bad input')\n",
                                                         encoding="utf-8")
    script = LOAD.replace("plugin._module_utils(sys.argv[2])", """
try:
    plugin._module_utils(sys.argv[2])
except RuntimeError as exc:
    assert "plugins/module_utils/broken.py did not load" in str(exc), exc
else:
    raise SystemExit("no RuntimeError")
""")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path), "broken"],
                            cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr + result.stdout
