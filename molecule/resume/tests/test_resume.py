"""The resume unit after two simulated boots (side_effect.yml): one failed resumed run, then one that succeeded."""


def test_a_failed_resumed_run_leaves_the_unit_failed_and_enabled_for_the_next_boot(host):
    after_failure = host.file("/root/resume-after-failed-boot.txt").content_string
    assert "active: failed" in after_failure, after_failure
    assert "enabled: enabled" in after_failure, after_failure
    assert "unit file: present" in after_failure, after_failure


def test_the_unit_ran_the_command_once_per_boot_and_logged_to_the_journal(host):
    assert host.file("/var/lib/v100-test-resume-runs").content_string == "--resumed\n--resumed\n"
    journal = host.check_output("journalctl -u v100-llm-resume.service --no-pager")
    assert "resumed run: --resumed" in journal


def test_a_successful_resumed_run_removes_the_unit(host):
    assert not host.file("/etc/systemd/system/v100-llm-resume.service").exists
    assert not host.file("/etc/systemd/system/multi-user.target.wants/v100-llm-resume.service").exists


def test_boot_does_not_wait_for_the_resumed_run(host):
    """multi-user.target is not ordered after the unit: a resumed run may take hours."""
    after_failure = host.file("/root/resume-after-failed-boot.txt").content_string
    line = next(line for line in after_failure.splitlines() if line.startswith("multi-user.target after:"))
    assert "basic.target" in line, line
    assert "v100-llm-resume.service" not in line, line


def test_the_unit_waits_for_basic_boot_and_the_network_and_stops_for_shutdown(host):
    """Without default dependencies, what it needs is named: basic.target (local file systems, sysinit) and the
    network (the playbook downloads), and shutdown stops it."""
    recorded = dict(line.split(": ", 1) for line in host.file("/root/resume-after-failed-boot.txt").content_string
                    .splitlines() if line.startswith("unit "))
    assert {"basic.target", "network-online.target"} <= set(recorded["unit after"].split()), recorded
    assert "shutdown.target" in recorded["unit conflicts"].split(), recorded
