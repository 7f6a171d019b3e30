"""Debian 12's own NVIDIA data-center driver, installed for real by the role.

What a container can honestly show: the packages of the requested branch are
installed and held, DKMS built the module, the reboot request is recorded, and
the pin and unattended-upgrades guard are in place. Loading the module needs a
real kernel and GPU (not here).
"""
import re

BRANCH = "535"
PACKAGES = [f"nvidia-tesla-{BRANCH}-kernel-dkms", f"nvidia-tesla-{BRANCH}-smi",
            f"libnvidia-tesla-{BRANCH}-cuda1", f"libnvidia-tesla-{BRANCH}-cfg1", "nvidia-persistenced"]


def test_branch_packages_installed(host):
    for name in PACKAGES:
        package = host.package(name)
        assert package.is_installed, name
    assert host.package(f"nvidia-tesla-{BRANCH}-kernel-dkms").version.startswith(BRANCH + ".")


def test_no_open_modules_and_no_other_branch(host):
    listed = host.check_output("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' "
                               "'nvidia-*' 'libnvidia-*' 2>/dev/null || true")
    # Status-Abbrev: "ii" installed, "hi" held and installed; virtual names show as "un".
    installed = [fields for fields in map(str.split, listed.splitlines()) if len(fields) == 3 and fields[2][1] == "i"]
    assert len(installed) >= len(PACKAGES)
    for name, version, _ in installed:
        assert not re.search(r"(^|-)open(-|$)", name), name
        match = re.match(r"(?:\d+:)?(\d{3})\.", version)
        assert not match or match.group(1) == BRANCH, (name, version)


def test_nvidia_modprobe_from_contrib_left_unheld(host):
    # Debian 12 ships it in contrib (535.161.07): added with non-free, never held.
    assert host.package("nvidia-modprobe").is_installed
    assert host.file("/usr/bin/nvidia-modprobe").is_file
    assert "nvidia-modprobe" not in host.check_output("apt-mark showhold").split()


def test_driver_packages_are_held(host):
    held = host.check_output("apt-mark showhold").split()
    for name in PACKAGES:
        assert name in held, name


def test_dkms_built_the_module(host):
    status = host.check_output("dkms status")
    assert re.search(rf"^nvidia-tesla-{BRANCH}[/,] ?{BRANCH}\.[\d.]+, \S+, x86_64: installed", status, re.M), status
    kernel = re.search(rf"{BRANCH}\.[\d.]+, (\S+), x86_64: installed", status).group(1)
    modules = host.check_output(f"find /lib/modules/{kernel} -name 'nvidia*.ko*'")
    assert "nvidia" in modules


def test_reboot_request_recorded(host):
    request = host.file("/var/lib/v100-llm/reboot-required.d/nvidia-driver")
    assert request.exists
    assert "NVIDIA driver packages changed" in request.content_string


def test_branch_pinned_and_kept_from_unattended_upgrades(host):
    pin = host.file("/etc/apt/preferences.d/nvidia-driver-branch.pref").content_string
    assert f"Pin: version {BRANCH}.*" in pin and "Pin-Priority: 1001" in pin
    guard = host.file("/etc/apt/apt.conf.d/51v100-llm-nvidia-driver").content_string
    assert '"nvidia-";' in guard and '"libnvidia-";' in guard
    policy = host.check_output(f"apt-cache policy nvidia-tesla-{BRANCH}-smi")
    assert "1001" in policy


def test_persistenced_enabled_with_persistence_on(host):
    assert host.service("nvidia-persistenced").is_enabled
    dropin = host.file("/etc/systemd/system/nvidia-persistenced.service.d/v100-llm.conf").content_string
    assert "ExecStart=/usr/bin/nvidia-persistenced --verbose" in dropin


def test_power_limit_applied_at_boot(host):
    unit = host.file("/etc/systemd/system/nvidia-power-limit.service").content_string
    assert "ExecStart=/usr/bin/nvidia-smi --power-limit=200" in unit
    assert host.service("nvidia-power-limit").is_enabled
    verified = host.run("systemd-analyze verify /etc/systemd/system/nvidia-power-limit.service")
    assert verified.rc == 0, verified.stderr


def test_each_component_configured_once_security_included(host):
    """The installer's sources have main non-free-firmware; the role adds contrib and non-free per suite."""
    assert not host.file("/etc/apt/sources.list.d/debian-nonfree.sources").exists
    for suite, uri in (("bookworm", "http://deb.debian.org/debian"),
                       ("bookworm-updates", "http://deb.debian.org/debian"),
                       ("bookworm-security", "http://deb.debian.org/debian-security")):
        source = host.file(f"/etc/apt/sources.list.d/v100-llm-debian-{suite}.sources").content_string
        assert f"Suites: {suite}\n" in source and f"URIs: {uri}\n" in source, source
        assert "Components: contrib non-free\n" in source, source
    update = host.run("apt-get update 2>&1")
    assert update.rc == 0, update.stdout
    assert "configured multiple times" not in update.stdout, update.stdout
    targets = host.check_output("apt-get indextargets --no-release-info --format '$(RELEASE)/$(COMPONENT)' "
                                "'Created-By: Packages' 'Architecture: amd64'").split()
    for suite in ("bookworm", "bookworm-updates", "bookworm-security"):
        for component in ("main", "contrib", "non-free", "non-free-firmware"):
            assert targets.count(f"{suite}/{component}") == 1, (suite, component, targets)
