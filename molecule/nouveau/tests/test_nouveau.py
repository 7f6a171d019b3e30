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
