"""config_files: what is touched, and that an unchanged file keeps its ctime (restarts and initramfs rebuilds read it)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.v100.llm.plugins.modules import config_files as module
from ansible_collections.v100.llm.plugins.module_utils.service.config_files import actions, entry_errors

UID, GID = os.getuid(), os.getgid()


def wanted(state="file", mode=0o644, content=b"x\n", uid=UID, gid=GID):
    return {"state": state, "mode": mode, "uid": uid, "gid": gid, "content": content}


def found(kind="file", mode=0o644, content=b"x\n", uid=UID, gid=GID):
    return {"kind": kind, "mode": mode, "uid": uid, "gid": gid, "content": content}


@pytest.mark.parametrize("want, there, expected", [
    (wanted(), None, ["create"]),
    (wanted(), found(), []),
    (wanted(), found(content=b"old\n"), ["write"]),
    (wanted(), found(mode=0o600), ["chmod"]),
    (wanted(), found(uid=UID + 1), ["chown"]),
    (wanted(), found(uid=UID + 1, mode=0o600), ["chown", "chmod"]),
    # A new content is written whole with its owner and mode: no separate chown or chmod.
    (wanted(), found(content=b"old\n", mode=0o600), ["write"]),
    # As template with follow: false, a link is replaced by the file.
    (wanted(), found(kind="link", content=None), ["create"]),
    (wanted(state="directory", mode=0o755, content=None), None, ["create"]),
    (wanted(state="directory", mode=0o755, content=None), found("directory", 0o755, None), []),
    (wanted(state="directory", mode=0o755, content=None), found("directory", 0o700, None), ["chmod"]),
    # In check mode an owner made by an earlier task is not there yet: reported, not refused.
    (wanted(uid=None), found(), ["chown"]),
])
def test_only_what_differs_is_done(want, there, expected):
    assert actions(want, there) == expected


@pytest.mark.parametrize("want, there", [
    (wanted(), found("directory", 0o755, None)),
    (wanted(state="directory", content=None), found()),
    (wanted(state="directory", content=None), found("link", content=None)),
])
def test_what_must_not_be_replaced_is_refused(want, there):
    with pytest.raises(ValueError, match="remove it first"):
        actions(want, there)


@pytest.mark.parametrize("entry, message", [
    ({"path": "etc/x", "mode": "0644", "content": ""}, "absolute"),
    ({"path": "/etc/../x", "mode": "0644", "content": ""}, "normalised"),
    ({"path": "/etc/x/", "mode": "0644", "content": ""}, "normalised"),
    ({"path": "/etc/x", "mode": "u=rw", "content": ""}, "octal"),
    ({"path": "/etc/x", "mode": "0644"}, "needs its content"),
    ({"path": "/etc/x", "mode": "0755", "state": "directory", "content": "x"}, "no content"),
    ({"path": "/etc/x", "mode": "0644", "state": "link", "content": ""}, "file or directory"),
])
def test_bad_entries_are_named(entry, message):
    errors = entry_errors(entry)
    assert len(errors) == 1 and message in errors[0]


def test_good_entries_pass():
    assert entry_errors({"path": "/etc/x", "mode": "0644", "content": ""}) == []
    assert entry_errors({"path": "/etc/x.d", "mode": "755", "state": "directory"}) == []


def apply_entry(path, content=None, mode="0644", state="file"):
    entry = {"path": str(path), "state": state, "mode": mode, "owner": "", "group": "", "content": content}
    want = {"state": state, "mode": int(mode, 8), "uid": UID, "gid": GID}
    if content is not None:
        want["content"] = content.encode()
    steps = actions(want, module.look(entry["path"], state))
    module.apply(entry["path"], want, steps)
    return steps


def test_files_and_folders_on_disk(tmp_path):
    folder = tmp_path / "a" / "unit.d"
    assert apply_entry(folder, mode="0750", state="directory") == ["create"]
    assert oct(folder.stat().st_mode & 0o777) == "0o750"

    target = folder / "sandbox.conf"
    assert apply_entry(target, "one\n") == ["create"]
    assert target.read_text() == "one\n" and oct(target.stat().st_mode & 0o777) == "0o644"
    before = target.stat()

    # Unchanged: not touched, so its ctime (what unit_freshness compares) stays.
    assert apply_entry(target, "one\n") == []
    assert target.stat().st_ctime_ns == before.st_ctime_ns and target.stat().st_ino == before.st_ino

    # New content: a new inode renamed over the old one, with no temporary left beside it.
    assert apply_entry(target, "two\n", mode="0600") == ["write"]
    assert target.read_text() == "two\n" and oct(target.stat().st_mode & 0o777) == "0o600"
    assert target.stat().st_ino != before.st_ino
    assert sorted(os.listdir(folder)) == ["sandbox.conf"]

    assert apply_entry(target, "two\n", mode="0644") == ["chmod"]
    assert oct(target.stat().st_mode & 0o777) == "0o644"


def test_a_link_is_replaced_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("keep\n")
    link = tmp_path / "unit.service"
    link.symlink_to(elsewhere)
    assert apply_entry(link, "unit\n") == ["create"]
    assert not link.is_symlink() and link.read_text() == "unit\n" and elsewhere.read_text() == "keep\n"


def test_the_diff_shows_content_or_attributes():
    entry = {"path": "/etc/x", "state": "file", "owner": "root", "group": "root", "mode": "0644", "content": "new\n"}
    there = found(content=b"old\n", uid=0, gid=0)
    written = module.diff_of(entry, there, ["write"])
    assert (written["before"], written["after"]) == ("old\n", "new\n")
    chmodded = module.diff_of(dict(entry, content="old\n"), dict(there, mode=0o600), ["chmod"])
    assert "0600" in chmodded["before"] and "0644" in chmodded["after"]


def test_missing_parents_are_0755_whatever_the_umask(tmp_path, monkeypatch):
    monkeypatch.setattr(module.os, "chown", lambda *args: None)  # root's only when run as root
    old = os.umask(0o027)
    try:
        assert apply_entry(tmp_path / "libexec" / "v100-llm", mode="0755", state="directory") == ["create"]
    finally:
        os.umask(old)
    assert oct((tmp_path / "libexec").stat().st_mode & 0o777) == "0o755"
    assert oct((tmp_path / "libexec" / "v100-llm").stat().st_mode & 0o777) == "0o755"


def test_a_link_to_a_folder_stands_for_the_folder(tmp_path):
    volume = tmp_path / "secrets-volume"
    volume.mkdir(mode=0o750)
    link = tmp_path / "llama-server"
    link.symlink_to(volume)
    assert apply_entry(link, mode="0750", state="directory") == []
    assert apply_entry(link, mode="0700", state="directory") == ["chmod"]
    assert link.is_symlink() and oct(volume.stat().st_mode & 0o777) == "0o700"


def test_copies_a_killed_run_left_are_found_and_removed(tmp_path):
    target = tmp_path / "chat.key"
    target.write_text("key\n")
    left = tmp_path / ".chat.key.k2j_x9ab"
    left.write_text("key\n")
    (tmp_path / ".chat.key.not-ours-because-long").write_text("")
    assert module.leftovers(str(target)) == [str(left)]
    assert apply_entry(target, "key\n", mode=oct(target.stat().st_mode & 0o777).replace("0o", "0")) == []
    module.apply(str(target), {"state": "file", "mode": 0o644, "uid": UID, "gid": GID, "content": b"key\n"},
                 ["clean"])
    assert not left.exists() and module.leftovers(str(target)) == []
