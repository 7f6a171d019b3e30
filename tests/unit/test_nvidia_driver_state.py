"""nvidia_driver_state simulates the install under the pins the role is about to write, before writing them."""
from __future__ import annotations

import os
import shutil

from ansible_collections.v100.llm.plugins.modules import nvidia_driver_state


def test_the_simulation_reads_the_new_pin_file_in_place_of_the_old_and_every_other_file(tmp_path, monkeypatch):
    parts = tmp_path / "preferences.d"
    parts.mkdir()
    (parts / "nvidia-driver-branch.pref").write_text("Package: *\nPin: version 535.*\nPin-Priority: 1001\n")
    (parts / "local.pref").write_text("Package: linux-image-amd64\nPin: release n=bookworm\nPin-Priority: 1001\n")
    monkeypatch.setattr(nvidia_driver_state, "PREFERENCES_PARTS", str(parts))
    folder = nvidia_driver_state.preferences_parts("Package: *\nPin: version 580.*\nPin-Priority: 1001\n",
                                                   "/etc/apt/preferences.d/nvidia-driver-branch.pref")
    try:
        assert sorted(os.listdir(folder)) == ["local.pref", "nvidia-driver-branch.pref"]
        assert "580.*" in open(os.path.join(folder, "nvidia-driver-branch.pref")).read()
        assert os.path.realpath(os.path.join(folder, "local.pref")) == str(parts / "local.pref")
        # The host's own file is untouched.
        assert "535.*" in (parts / "nvidia-driver-branch.pref").read_text()
    finally:
        shutil.rmtree(folder)
