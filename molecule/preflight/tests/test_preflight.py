"""After every preflight case ran, the host must still be a bare host.

converge.yml already compares a file listing before and after; these checks
say the same thing in the terms a user would look for.
"""


def test_no_nvidia_package_was_installed(host):
    listed = host.run("dpkg-query -W -f '${Package}\\n'")
    assert listed.rc == 0
    assert not [p for p in listed.stdout.split() if "nvidia" in p or p.startswith("cuda")]


def test_nouveau_was_not_blacklisted(host):
    assert not host.file("/etc/modprobe.d/blacklist-nouveau.conf").exists


def test_no_apt_source_was_added(host):
    assert host.run("ls /etc/apt/sources.list.d").stdout.strip() == ""
