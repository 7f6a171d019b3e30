"""The filter plugins import each module_utils file they wrap on first use, by its collection path.

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
FILTERS = sorted((PROJECT_ROOT / "plugins" / "filter").glob("*.py"))
WRAPPED = [(path.stem, name) for path in FILTERS
           for name in re.findall(r'^_[A-Z_]+ = Deferred\("([\w.]+)"\)$', path.read_text(encoding="utf-8"), re.M)]
UTILS = "ansible_collections.v100.llm.plugins.module_utils."

LOAD = """
import importlib
import sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.v100.llm.plugins.plugin_utils import deferred
plugin = importlib.import_module("ansible_collections.v100.llm.plugins.filter." + sys.argv[2])
plugin.FilterModule().filters()
loaded = [name for name in sys.modules if name.startswith("%s")]
assert not loaded, "loaded before any filter was called: %%s" %% loaded
deferred.load(sys.argv[3])
""" % UTILS


def test_the_plugins_wrap_the_module_utils_they_name():
    assert len(WRAPPED) >= 15


def test_no_two_filter_files_define_one_filter():
    names = [name for path in FILTERS for name in re.findall(r'^ +"(\w+)": ', path.read_text(encoding="utf-8"), re.M)]
    assert len(names) == len(set(names)), sorted(name for name in names if names.count(name) > 1)


@pytest.mark.parametrize(("plugin", "name"), WRAPPED)
def test_each_wrapped_file_loads_alone_in_a_fresh_interpreter(plugin, name, tmp_path):
    result = subprocess.run([sys.executable, "-c", LOAD, str(PROJECT_ROOT / "collections"), plugin, name],
                            cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_a_file_that_does_not_load_is_reported_as_such_not_as_bad_input(tmp_path):
    collection = tmp_path / "ansible_collections" / "v100" / "llm" / "plugins"
    (collection / "plugin_utils").mkdir(parents=True)
    (collection / "module_utils").mkdir(parents=True)
    deferred = PROJECT_ROOT / "plugins" / "plugin_utils" / "deferred.py"
    (collection / "plugin_utils" / "deferred.py").write_text(deferred.read_text(encoding="utf-8"), encoding="utf-8")
    (collection / "module_utils" / "broken.py").write_text("raise ValueError('a bug, not bad input')\\n",
                                                         encoding="utf-8")
    script = """
import sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred
try:
    Deferred("broken").anything()
except RuntimeError as exc:
    assert "plugins/module_utils/broken.py did not load" in str(exc), exc
else:
    raise SystemExit("no RuntimeError")
"""
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=tmp_path, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr + result.stdout
