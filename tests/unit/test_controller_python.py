"""scripts/controller-python: which Python the controller's venv is made from, or what to install."""
from __future__ import annotations

import importlib.machinery
import importlib.util

import pytest

from conftest import PROJECT_ROOT

_loader = importlib.machinery.SourceFileLoader("controller_python", str(PROJECT_ROOT / "scripts" / "controller-python"))
_spec = importlib.util.spec_from_loader("controller_python", _loader)
controller_python = importlib.util.module_from_spec(_spec)
_loader.exec_module(controller_python)
choose = controller_python.choose

# What apt offers (apt-cache policy candidates) on each controller distribution.
UBUNTU_2204 = {"python3.11", "python3.11-venv"}  # universe (jammy-updates); python3 itself is 3.10
UBUNTU_2404 = {"python3.12-venv"}
DEBIAN_12 = {"python3.11-venv"}


@pytest.mark.parametrize("interpreters, apt, root, decision", [
    # Debian 12 and Ubuntu 24.04 with python3-venv installed: no root, no apt.
    ([("/usr/bin/python3", (3, 11), True)], DEBIAN_12, False, ("use", "/usr/bin/python3")),
    ([("/usr/bin/python3", (3, 12), True)], UBUNTU_2404, False, ("use", "/usr/bin/python3")),
    # Their stock install lacks venv: the distribution's -venv package, as root.
    ([("/usr/bin/python3", (3, 11), False)], DEBIAN_12, True, ("apt", ["python3.11-venv"])),
    ([("/usr/bin/python3", (3, 12), False)], UBUNTU_2404, True, ("apt", ["python3.12-venv"])),
    # Ubuntu 22.04: python3 is 3.10; universe's python3.11 with its venv, as root.
    ([("/usr/bin/python3", (3, 10), False)], UBUNTU_2204, True, ("apt", ["python3.11", "python3.11-venv"])),
    # ... and a python3.11 already installed is used.
    ([("/usr/bin/python3", (3, 10), True), ("/usr/bin/python3.11", (3, 11), True)], UBUNTU_2204, False,
     ("use", "/usr/bin/python3.11")),
    # Without root but with a 3.10 that has venv: uv fetches a managed 3.11.
    ([("/usr/bin/python3", (3, 10), True)], UBUNTU_2204, False, ("uv", "3.11")),
    # No apt (macOS with Xcode's 3.9): uv.
    ([("/usr/bin/python3", (3, 9), True)], None, False, ("uv", "3.11")),
])
def test_the_decision(interpreters, apt, root, decision):
    assert choose(interpreters, apt, root, any(item[2] for item in interpreters)) == decision


def test_without_root_or_venv_it_names_the_package_to_install():
    decision, message = choose([("/usr/bin/python3", (3, 10), False)], UBUNTU_2204, False, False)
    assert decision == "error"
    assert "sudo apt-get install python3.11 python3.11-venv" in message and "Python >= 3.11" in message


def test_without_apt_or_any_venv_it_says_what_to_install_in_one_line():
    decision, message = choose([("/usr/bin/python3", (3, 9), False)], None, False, False)
    assert decision == "error" and "\n" not in message
    assert "/usr/bin/python3 3.9 without venv" in message and "brew install python@3.12" in message
    assert "UV_PYTHON_INSTALL_MIRROR" in message
