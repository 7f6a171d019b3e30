"""local_wheel: the pyairports wheel the vllm role installs, built and installed for real."""
from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest
from conftest import PROJECT_ROOT

from ansible_collections.v100.llm.plugins.module_utils.vllm.local_wheel import wheel_bytes, wheel_entries, wheel_filename

PYAIRPORTS = PROJECT_ROOT / "roles" / "vllm" / "files" / "pyairports"
FILES = {"pyairports/__init__.py": (PYAIRPORTS / "__init__.py").read_text(),
         "pyairports/airports.py": (PYAIRPORTS / "airports.py").read_text()}


def test_the_same_bytes_every_time():
    first = wheel_bytes("pyairports", "0.0.1+v100llm.1", FILES, ["airportsdata"])
    assert first == wheel_bytes("pyairports", "0.0.1+v100llm.1", dict(reversed(list(FILES.items()))), ["airportsdata"])
    assert first != wheel_bytes("pyairports", "0.0.1+v100llm.2", FILES, ["airportsdata"])


def test_metadata_and_record():
    entries = dict(wheel_entries("pyairports", "0.0.1+v100llm.1", FILES, ["airportsdata"], "x"))
    metadata = entries["pyairports-0.0.1+v100llm.1.dist-info/METADATA"].decode()
    assert "Name: pyairports\nVersion: 0.0.1+v100llm.1\nSummary: x\nRequires-Dist: airportsdata\n" in metadata
    record = entries["pyairports-0.0.1+v100llm.1.dist-info/RECORD"].decode().splitlines()
    assert record[-1] == "pyairports-0.0.1+v100llm.1.dist-info/RECORD,,"
    assert record[0].startswith("pyairports/__init__.py,sha256=")
    assert wheel_filename("pyairports", "0.0.1+v100llm.1") == "pyairports-0.0.1+v100llm.1-py3-none-any.whl"


@pytest.mark.parametrize("name, version", [("bad name", "1"), ("pyairports", "1.0 beta"), ("x", "")])
def test_bad_names_and_versions_are_refused(name, version):
    with pytest.raises(ValueError):
        wheel_filename(name, version)


def test_paths_outside_the_wheel_are_refused():
    with pytest.raises(ValueError):
        wheel_entries("p", "1", {"../evil.py": ""})


def test_pip_installs_it_and_outlines_finds_airport_list(tmp_path):
    """A real pip install into a fresh folder. No index here, so airportsdata
    STANDS IN as a one-row module (the real rows are checked by molecule/vllm);
    the last line is what outlines 0.0.46 does with AIRPORT_LIST."""
    wheel = tmp_path / wheel_filename("pyairports", "0.0.1+v100llm.1")
    wheel.write_bytes(wheel_bytes("pyairports", "0.0.1+v100llm.1", FILES, []))
    assert zipfile.ZipFile(wheel).testzip() is None
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--target", str(target),
                    str(wheel)], check=True, capture_output=True)
    (target / "airportsdata.py").write_text(
        "def load(code):\n    return {'SFO': dict(name='San Francisco International Airport', city='San Francisco',"
        " country='US', icao='KSFO', lat=37.6, lon=-122.4, elevation=13, tz='America/Los_Angeles')}\n")
    out = subprocess.run([sys.executable, "-c", "from pyairports.airports import AIRPORT_LIST; "
                          "print(sorted({(a[3], a[3]) for a in AIRPORT_LIST if a[3] != ''}))"],
                         env={"PYTHONPATH": str(target)}, check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[('SFO', 'SFO')]"
    assert (target / "pyairports-0.0.1+v100llm.1.dist-info" / "METADATA").is_file()
