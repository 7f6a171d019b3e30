# -*- coding: utf-8 -*-
"""Secure Boot and the DKMS signing key: read the state, decide whether the
driver may go in.

With Secure Boot enforcing, the kernel loads only modules signed by a key in
its keyrings. DKMS signs what it builds with a machine owner key (MOK) that
someone must enrol at the console (MokManager) before the module loads; until
then the host boots into "Key was rejected by service" and never gets a
driver. Canonical's prebuilt modules are signed by Canonical and need nothing.

Sources:
- The SecureBoot variable (EFI global GUID 8be4df61-93ca-11d2-aa0d-00e098032b8c):
  efivarfs files start with the 4-byte attributes, then the data; SecureBoot's
  data is one byte, 1 when enforcing (UEFI spec 2.10, 3.3 "Globally Defined
  Variables"; Linux Documentation/filesystems/efivarfs.rst).
- mokutil's messages: lcp/mokutil src/mokutil.c at 0.6.0 (b4d8693f; the
  mokutil of Debian 12, Ubuntu 22.04 and 24.04 on amd64): --sb-state prints
  "SecureBoot enabled" (then "SecureBoot validation is disabled in shim" when
  MokSBStateRT is set, and the kernel then does not enforce) or "SecureBoot
  disabled", and exits 0 either way; without efivars "EFI variables are not
  supported on this system", without the variable "This system doesn't
  support Secure Boot". --test-key prints "<key> is not enrolled" (exit 0),
  "<key> is already enrolled", "... is already in db", "... is already in the
  enrollment request", "... is blocked in dbx" / "in MokListXRT" (exit 1), or
  on stderr "... is already in the built-in trusted keyring" (exit 255);
  mokutil after 0.7.2 inverts the 0/1 codes, so only the text is read.
- Where DKMS keeps its key: Debian 12's dkms 3.0.10-8 (/usr/sbin/dkms,
  prepare_signing: /var/lib/dkms/mok.key and the DER certificate mok.pub,
  made with openssl on the first build); Ubuntu's dkms 2.8.7 and 3.0.11
  (/var/lib/shim-signed/mok/MOK.priv and MOK.der, made by shim-signed's
  `update-secureboot-policy --new-key`). Enrolment: dkms README (v3.0.10),
  "Secure Boot".

Runs on the managed host's Python (3.8+): no third-party imports.
"""
from __future__ import annotations

import re
from typing import Dict, Optional, Sequence

EFI_GLOBAL_GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"
SECURE_BOOT_EFIVAR = "SecureBoot-" + EFI_GLOBAL_GUID

# The DKMS signing certificate and how to make it, per distribution (the
# package that creates the folder first: the refusal comes before any install).
DKMS_KEYS: Dict[str, Dict[str, str]] = {
    # The command dkms 3.0.10 itself runs when the key is missing.
    "Debian": {"certificate": "/var/lib/dkms/mok.pub",
               "generate": 'sudo apt-get install dkms; sudo openssl req -new -x509 -nodes -days 36500 '
                           '-subj "/CN=DKMS module signing key" -newkey rsa:2048 -keyout /var/lib/dkms/mok.key '
                           '-outform DER -out /var/lib/dkms/mok.pub'},
    "Ubuntu": {"certificate": "/var/lib/shim-signed/mok/MOK.der",
               "generate": "sudo apt-get install shim-signed dkms; sudo update-secureboot-policy --new-key"},
}


def _dkms_key(distribution: str) -> Dict[str, str]:
    return DKMS_KEYS.get(distribution, DKMS_KEYS["Debian"])


def dkms_certificate(distribution: str, framework_files: Sequence[str]) -> str:
    """The certificate DKMS signs with: mok_certificate= in /etc/dkms/framework.conf and then
    framework.conf.d/*.conf (sourced in that order: the last one wins), else the distribution's default."""
    certificate = _dkms_key(distribution)["certificate"]
    for text in framework_files:
        for line in text.splitlines():
            match = re.match(r"""^\s*mok_certificate=(['"]?)(\S+?)\1\s*(?:#.*)?$""", line)
            if match:
                certificate = match.group(2)
    return certificate


def efivar_secure_boot(data: bytes) -> Optional[bool]:
    """The SecureBoot efivarfs file -> enforcing or not; None when it is not 4 attribute bytes and one value."""
    if len(data) != 5:
        return None
    return data[4] == 1


def mokutil_secure_boot(output: str) -> Optional[bool]:
    """`mokutil --sb-state` (stdout and stderr) -> enforcing or not; None when it says neither."""
    if "SecureBoot validation is disabled in shim" in output:
        return False
    if "SecureBoot enabled" in output:
        return True
    if any(text in output for text in ("SecureBoot disabled", "EFI variables are not supported",
                                       "doesn't support Secure Boot")):
        return False
    return None


def mokutil_key_state(output: str) -> Optional[str]:
    """`mokutil --test-key <certificate>` -> "enrolled" (also in db or the kernel's built-in keyring),
    "pending" (queued, enrolled at the next boot's MokManager), "blocked" (in dbx or MokListXRT),
    "not_enrolled", or None when mokutil said something else."""
    if any(text in output for text in ("is already enrolled", "is already in db",
                                       "is already in the built-in trusted keyring")):
        return "enrolled"
    if "is blocked in" in output:
        return "blocked"
    if "is already in the enrollment request" in output:
        return "pending"
    if "is not enrolled" in output:
        return "not_enrolled"
    return None


def secure_boot_refusal(secure_boot: Optional[bool], dkms: bool, distribution: str, certificate: str,
                        certificate_exists: bool, key_state: Optional[str], mokutil: bool, branch: int) -> Optional[str]:
    """Why the DKMS driver must not go in under Secure Boot, with the steps that fix it; None when it may.
    `key_state` is mokutil_key_state's answer, None where mokutil was not asked."""
    if not secure_boot or not dkms or key_state == "enrolled":
        return None
    generate = _dkms_key(distribution)["generate"]
    steps = [] if mokutil else ["sudo apt-get install mokutil"]
    if key_state == "pending":
        reason = "the DKMS signing key %s is queued for enrolment but not enrolled yet" % certificate
    else:
        if not certificate_exists:
            reason = "the DKMS signing key %s does not exist yet" % certificate
            steps.append("make it: %s" % generate)
        elif key_state == "blocked":
            reason = "the DKMS signing key %s is blocked (dbx or MokListXRT)" % certificate
            steps.append("move it and its private key away and make a new one: %s" % generate)
        elif key_state == "not_enrolled":
            reason = "the DKMS signing key %s is not enrolled" % certificate
        else:
            reason = ("whether the DKMS signing key %s is enrolled could not be checked (%s)"
                      % (certificate, "mokutil --test-key gave no known answer" if mokutil else "no mokutil"))
        steps.append("queue it: sudo mokutil --import %s (choose a one-time password)" % certificate)
    steps += ["reboot and, at the console's blue MokManager screen, choose Enroll MOK, Continue, Yes, "
              "enter that password, Reboot",
              "check with mokutil --test-key %s (\"is already enrolled\") and run the playbook again" % certificate]
    alternatives = "Or turn Secure Boot off in the firmware"
    if distribution == "Ubuntu":
        alternatives = ("Or use Canonical's signed modules, which need no enrolment: nvidia_driver_source=distro "
                        "nvidia_driver_prebuilt_modules=true (linux-modules-nvidia-%d-server-<flavour>); or turn "
                        "Secure Boot off in the firmware" % branch)
    return ("Secure Boot is on and %s: the module DKMS builds would be rejected at boot (\"Key was rejected by "
            "service\") and the host would come back without a driver. Nothing was changed. Steps: %s. %s."
            % (reason, "; ".join("%d) %s" % (number, step) for number, step in enumerate(steps, 1)), alternatives))
