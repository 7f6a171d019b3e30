"""What a host relies on after the nouveau role."""


def test_blacklist_written(host):
    conf = host.file("/etc/modprobe.d/blacklist-nouveau.conf")
    assert conf.exists and conf.user == "root" and conf.mode == 0o644
    lines = [line for line in conf.content_string.splitlines() if not line.startswith("#")]
    assert lines == ["blacklist nouveau", "options nouveau modeset=0"]


def test_modprobe_reads_the_blacklist(host):
    # kmod parses modprobe.d for real: the options line must be understood.
    shown = host.run("modprobe --showconfig")
    assert shown.rc == 0
    assert "blacklist nouveau" in shown.stdout
    assert "options nouveau modeset=0" in shown.stdout


def test_nouveau_leaves_no_reboot_request_of_its_own(host):
    # nvidia_driver decides the reboot from /sys/module/nouveau and the blacklist.
    assert not host.file("/sys/module/nouveau").exists
    assert not host.file("/var/lib/v100-llm/reboot-required.d/nouveau").exists


def test_host_guard_finished_the_interrupted_dpkg(host):
    # prepare.yml left v100-guard-test half-configured and v100-guard-pre half-installed.
    assert host.run("dpkg --audit").stdout == ""
    states = host.check_output("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' 'v100-guard-*'")
    assert [line.split() for line in states.splitlines()] == [["v100-guard-pre", "ii"], ["v100-guard-test", "ii"]]
    assert host.file("/usr/share/v100-guard-pre/file").content_string == "data\n"
    assert host.run("ls /var/lib/dpkg/updates | grep -E '^[0-9]+$'").stdout == ""
