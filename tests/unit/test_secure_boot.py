"""secure_boot: the state from recorded mokutil outputs and efivarfs bytes, and the refusal."""
from __future__ import annotations

import pytest

from ansible_collections.v100.llm.plugins.module_utils.driver.secure_boot import (
    dkms_certificate,
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
    (DEBIAN_KEY + " is already in the built-in trusted keyring\n", "enrolled"),
    (DEBIAN_KEY + " is blocked in dbx\n", "blocked"),
    (DEBIAN_KEY + " is not enrolled\n", "not_enrolled"),
    ("Failed to open " + DEBIAN_KEY + "\n", None),
])
def test_key_state(output, state):
    assert mokutil_key_state(output) == state


UBUNTU_KEY = "/var/lib/shim-signed/mok/MOK.der"


def refusal(secure_boot=True, dkms=True, distribution="Debian", certificate=DEBIAN_KEY, exists=True,
            key_state=None, mokutil=True, branch=535):
    return secure_boot_refusal(secure_boot, dkms, distribution, certificate, exists, key_state, mokutil, branch)


def test_no_refusal_when_secure_boot_is_off_or_the_key_is_enrolled_or_modules_are_prebuilt():
    assert refusal(secure_boot=False) is None
    assert refusal(secure_boot=None) is None
    assert refusal(key_state="enrolled") is None
    assert refusal(dkms=False, distribution="Ubuntu", certificate=UBUNTU_KEY, exists=False) is None


def test_refusal_without_a_key_gives_every_step():
    text = refusal(exists=False)
    assert "Secure Boot is on and the DKMS signing key /var/lib/dkms/mok.pub does not exist yet" in text
    assert "Nothing was changed" in text
    # /var/lib/dkms exists only once dkms is installed, and the refusal comes first.
    assert "1) make it: sudo apt-get install dkms; sudo openssl req -new -x509" in text
    assert "2) queue it: sudo mokutil --import /var/lib/dkms/mok.pub" in text
    assert "Enroll MOK, Continue, Yes" in text and "run the playbook again" in text


def test_refusal_on_ubuntu_names_the_signed_modules():
    text = refusal(distribution="Ubuntu", certificate=UBUNTU_KEY, key_state="not_enrolled", branch=580)
    assert "/var/lib/shim-signed/mok/MOK.der is not enrolled" in text and "make it" not in text
    assert "nvidia_driver_prebuilt_modules=true (linux-modules-nvidia-580-server-<flavour>)" in text


def test_refusal_when_enrolment_is_queued_says_reboot():
    text = refusal(key_state="pending")
    assert "queued for enrolment but not enrolled yet" in text
    assert "mokutil --import" not in text and "1) reboot" in text


def test_refusal_without_mokutil_says_the_state_is_unknown():
    text = refusal(mokutil=False)
    assert "could not be checked (no mokutil)" in text and "1) sudo apt-get install mokutil" in text


def test_refusal_of_a_blocked_key_asks_for_a_new_one():
    text = refusal(key_state="blocked")
    assert "is blocked (dbx or MokListXRT)" in text and "make a new one" in text


def test_the_certificate_comes_from_dkms_framework_conf():
    # dkms 3.0.10's framework.conf ships the defaults commented out; the last assignment wins.
    shipped = "# mok_signing_key=/var/lib/dkms/mok.key\n# mok_certificate=/var/lib/dkms/mok.pub\n"
    assert dkms_certificate("Debian", [shipped]) == DEBIAN_KEY
    assert dkms_certificate("Ubuntu", []) == UBUNTU_KEY
    own = 'mok_certificate="/root/keys/mok.der"\n'
    assert dkms_certificate("Debian", [shipped, own]) == "/root/keys/mok.der"
