"""secure_boot: the state from recorded mokutil outputs and efivarfs bytes, and the refusal."""
from __future__ import annotations

import pytest

from ansible.module_utils.secure_boot import (
    efivar_secure_boot,
    mokutil_key_state,
    mokutil_secure_boot,
    secure_boot_refusal,
)
from conftest import RECORDED

MOKUTIL = RECORDED / "mokutil"
DEBIAN_KEY = "/var/lib/dkms/mok.pub"


@pytest.mark.parametrize("recording, enabled", [
    ("mokutil--sb-state_enabled_dkms-readme.txt", True),
    ("mokutil--sb-state_setup-mode_system76.txt", False),
    ("mokutil--import_no-efivars_darling.txt", False),
])
def test_secure_boot_from_recorded_mokutil(recording, enabled):
    assert mokutil_secure_boot((MOKUTIL / recording).read_text()) is enabled


def test_secure_boot_from_mokutil_source_strings():
    # src/mokutil.c 0.6.0: shim validation off means the kernel does not enforce.
    assert mokutil_secure_boot("SecureBoot enabled\nSecureBoot validation is disabled in shim\n") is False
    assert mokutil_secure_boot("This system doesn't support Secure Boot\n") is False
    assert mokutil_secure_boot("Cannot determine secure boot state.\n") is None


@pytest.mark.parametrize("data, enabled", [
    # lcp/mokutil issue 45: "SecureBoot should be "06 00 00 00 01"".
    (bytes([6, 0, 0, 0, 1]), True),
    (bytes([6, 0, 0, 0, 0]), False),
    (bytes([6, 0, 0, 0]), None),
])
def test_secure_boot_from_efivarfs(data, enabled):
    assert efivar_secure_boot(data) is enabled


# Built from src/mokutil.c 0.6.0's printf formats (test_key, print_skip_message):
# no pasted --test-key output was found.
@pytest.mark.parametrize("output, state", [
    (DEBIAN_KEY + " is already enrolled\n", "enrolled"),
    (DEBIAN_KEY + " is already in db\n", "enrolled"),
    (DEBIAN_KEY + " is already in the enrollment request\n", "pending"),
    (DEBIAN_KEY + " is not enrolled\n", "not_enrolled"),
    ("Failed to open " + DEBIAN_KEY + "\n", None),
])
def test_key_state(output, state):
    assert mokutil_key_state(output) == state


def test_no_refusal_when_secure_boot_is_off_or_the_key_is_enrolled_or_modules_are_prebuilt():
    assert secure_boot_refusal(False, True, "Debian", True, None, 535) is None
    assert secure_boot_refusal(None, True, "Debian", True, None, 535) is None
    assert secure_boot_refusal(True, True, "Debian", True, "enrolled", 535) is None
    assert secure_boot_refusal(True, False, "Ubuntu", False, None, 580) is None


def test_refusal_without_a_key_gives_every_step():
    refusal = secure_boot_refusal(True, True, "Debian", False, None, 535)
    assert "Secure Boot is on and the DKMS signing key /var/lib/dkms/mok.pub does not exist yet" in refusal
    assert "Nothing was changed" in refusal
    assert "1) make the DKMS signing key: openssl req -new -x509" in refusal
    assert "2) queue it: mokutil --import /var/lib/dkms/mok.pub" in refusal
    assert "Enroll MOK, Continue, Yes" in refusal and "run the playbook again" in refusal


def test_refusal_on_ubuntu_names_the_signed_modules():
    refusal = secure_boot_refusal(True, True, "Ubuntu", True, "not_enrolled", 580)
    assert "/var/lib/shim-signed/mok/MOK.der is not enrolled" in refusal
    assert "make the DKMS signing key" not in refusal
    assert "nvidia_driver_prebuilt_modules=true (linux-modules-nvidia-580-server-<flavour>)" in refusal


def test_refusal_when_enrolment_is_queued_says_reboot():
    refusal = secure_boot_refusal(True, True, "Debian", True, "pending", 535)
    assert "queued for enrolment but not enrolled yet" in refusal
    assert "mokutil --import" not in refusal and "1) reboot" in refusal
