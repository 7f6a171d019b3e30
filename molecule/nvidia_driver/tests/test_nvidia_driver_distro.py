"""Debian 12's own NVIDIA driver (535), installed for real by the role.

What a container can honestly show: the requested version's whole package set
is installed at one version and held although a newer version of every package
is in bookworm-security, apt would move none of it, DKMS built the module, the
reboot request is recorded, and the pin and unattended-upgrades guard are in
place. Loading the module needs a real kernel and GPU (not here).
"""
import re

BRANCH = "535"
VERSION = "535.261.03-1"         # bookworm
NEWER = "535.309.01-0+deb12u1"   # bookworm-security
PACKAGES = ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-cfg1", "nvidia-persistenced"]
# Unversioned names that depend on each other with (= version): the set a
# branch pattern alone left to apt's newest.
SET = ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "nvidia-alternative", "nvidia-kernel-support",
       "firmware-nvidia-gsp", "libnvidia-ml1", "libnvidia-ptxjitcompiler1", "libnvidia-pkcs11-openssl3"]


def test_branch_packages_installed(host):
    for name in PACKAGES:
        package = host.package(name)
        assert package.is_installed, name
    assert host.package("nvidia-kernel-dkms").version.startswith(BRANCH + ".")


def test_the_older_version_is_installed_as_one_set_beside_a_newer_one(host):
    for name in SET:
        assert host.package(name).version == VERSION, name
    # The newer version is really there (bookworm-security), and the pin keeps it out.
    policy = host.check_output("apt-cache policy libcuda1")
    assert NEWER in policy and f"*** {VERSION} 1001" in policy, policy


def test_the_set_comes_from_debian_although_nvidias_repo_has_the_same_names_and_version(host):
    """The fixture repo standing in for NVIDIA's carries 535.261.03-1 under Debian's names; apt keeps both
    records, and only the role's origin pin (l=NVIDIA CUDA: -1 for the set) makes Debian's win."""
    policy = host.check_output("apt-cache policy nvidia-smi")
    lines = policy.splitlines()
    installed = lines.index(f" *** {VERSION} 1001")
    assert "deb.debian.org/debian bookworm/non-free" in lines[installed + 1], policy
    assert f"     {VERSION} -1" in lines and "http://127.0.0.1:8765" in policy, policy
    # Debian's real nvidia-smi (a binary), not the fixture's stand-in script.
    assert host.run("grep -q STAND-IN /usr/bin/nvidia-smi").rc == 1
    assert host.run("head -c 4 /usr/bin/nvidia-smi | grep -q ELF").rc == 0


def test_upgrade_and_dist_upgrade_move_nothing_of_the_set(host):
    for command in ("apt-get -s upgrade", "apt-get -s dist-upgrade"):
        simulated = host.check_output(command)
        moved = [line for line in simulated.splitlines() if line.startswith(("Inst ", "Remv "))
                 and line.split()[1] in SET + PACKAGES]
        assert moved == [], (command, moved)


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
    for name in PACKAGES + SET:
        assert name in held, name


def test_dkms_built_the_module(host):
    status = host.check_output("dkms status")
    assert re.search(rf"^nvidia-current[/,] ?{BRANCH}\.[\d.]+, \S+, x86_64: installed", status, re.M), status
    kernel = re.search(rf"{BRANCH}\.[\d.]+, (\S+), x86_64: installed", status).group(1)
    modules = host.check_output(f"find /lib/modules/{kernel} -name 'nvidia*.ko*'")
    assert "nvidia" in modules


def test_reboot_request_recorded(host):
    request = host.file("/var/lib/v100-llm/reboot-required.d/nvidia-driver")
    assert request.exists
    assert "NVIDIA driver packages changed" in request.content_string


def test_branch_pinned_and_kept_from_unattended_upgrades(host):
    pin = host.file("/etc/apt/preferences.d/nvidia-driver-branch.pref").content_string
    assert f"Pin: version {BRANCH}.*" in pin and f"Pin: version {VERSION}\n" in pin and "Pin-Priority: 1001" in pin
    guard = host.file("/etc/apt/apt.conf.d/51v100-llm-nvidia-driver").content_string
    assert '"nvidia-";' in guard and '"libnvidia-";' in guard
    policy = host.check_output("apt-cache policy nvidia-smi")
    assert "1001" in policy
    assert '"libcuda1$";' in guard


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


# The kernel side (prepare.yml held the kernel at bookworm's 6.1.0-50;
# side_effect.yml let bookworm-security's 6.1.0-57 in, then removed the module
# from DKMS's tree).
FIRST_KERNEL = "6.1.0-50-amd64"
UPDATED_KERNEL = "6.1.0-57-amd64"


def _dkms_kernels(status):
    return set(re.findall(rf"^nvidia-current[/,] ?{BRANCH}\.[\d.]+, (\S+), x86_64: installed", status, re.M))


def test_the_kernel_metas_are_installed_and_never_held(host):
    held = host.check_output("apt-mark showhold").split()
    for name in ("linux-headers-amd64", "linux-image-amd64"):
        assert host.package(name).is_installed, name
        assert name not in held, name


def test_dkms_built_the_module_for_a_kernel_that_came_after_the_driver(host):
    """DKMS's kernel hooks did it alone: the headers meta brought the new kernel's headers."""
    after_update = host.file("/root/dkms-status-after-kernel-update.txt").content_string
    assert {FIRST_KERNEL, UPDATED_KERNEL} <= _dkms_kernels(after_update), after_update


def test_the_next_run_rebuilt_the_module_for_the_kernel_grub_boots(host):
    # GRUB_DEFAULT=0 boots the newest /boot/vmlinuz-*; the container cannot boot it.
    kernels = host.file("/root/boot-after-repair.txt").content_string.split()
    assert f"vmlinuz-{UPDATED_KERNEL}" in kernels and f"vmlinuz-{FIRST_KERNEL}" in kernels
    after_repair = host.file("/root/dkms-status-after-repair.txt").content_string
    assert {FIRST_KERNEL, UPDATED_KERNEL} <= _dkms_kernels(after_repair), after_repair


def test_a_module_gone_from_dkms_tree_is_registered_and_built_again(host):
    # The package's postinst adds it back and builds it; the kernel GRUB boots must have it. side_effect.yml
    # purged the first kernel beforehand, so that is the only one.
    assert _dkms_kernels(host.check_output("dkms status")) == {UPDATED_KERNEL}
    assert not host.package(f"linux-image-{FIRST_KERNEL}").is_installed
    modules = host.check_output(f"find /lib/modules/{UPDATED_KERNEL}/updates -name 'nvidia*.ko*'")
    assert "nvidia" in modules


def test_the_test_compiler_cache_served_the_module_builds(host):
    """Not the role's: the scenario's speed (molecule.yml). Counted from prepare.yml on, so a run whose builds
    bypass ccache fails here (the repairs rebuild for a kernel this run already built for: hits even when cold)."""
    stats = host.check_output("ccache --print-stats")
    counters = dict(line.split("\t", 1) for line in stats.splitlines())
    assert int(counters["direct_cache_hit"]) + int(counters["preprocessed_cache_hit"]) > 0, stats
