"""A blacklist holds at boot only once the initramfs carries it: decided from each image (recorded lsinitramfs)."""
from __future__ import annotations

from conftest import FIXTURES

from ansible_collections.v100.llm.plugins.module_utils.driver.initramfs import kernel_of, stale_images

CONF = "/etc/modprobe.d/blacklist-nouveau.conf"
WITH = (FIXTURES / "debian12" / "lsinitramfs_blacklist-nouveau_debian12.txt").read_text()
WITHOUT = (FIXTURES / "debian12" / "lsinitramfs_without-blacklist_debian12.txt").read_text()


def images(**listing_and_mtime):
    return {"/boot/initrd.img-" + kernel.replace("_", "-"): {"listing": listing, "mtime": mtime}
            for kernel, (listing, mtime) in listing_and_mtime.items()}


def test_an_image_without_the_blacklist_is_rebuilt_even_when_this_run_wrote_nothing():
    found = images(**{"6.1.0_41_amd64": (WITH, 200.0), "6.1.0_42_amd64": (WITHOUT, 200.0)})
    assert stale_images(found, CONF, 100.0, wanted=True) == ["6.1.0-42-amd64"]


def test_an_image_older_than_the_blacklist_is_rebuilt():
    found = images(**{"6.1.0_41_amd64": (WITH, 100.0)})
    assert stale_images(found, CONF, 150.0, wanted=True) == ["6.1.0-41-amd64"]
    assert stale_images(found, CONF, 50.0, wanted=True) == []


def test_a_removed_blacklist_leaves_the_images_too():
    found = images(**{"6.1.0_41_amd64": (WITH, 100.0), "6.1.0_42_amd64": (WITHOUT, 100.0)})
    assert stale_images(found, CONF, 0, wanted=False) == ["6.1.0-41-amd64"]


def test_kernel_versions_come_from_the_image_names():
    assert kernel_of("/boot/initrd.img-6.12.95+deb12-amd64") == "6.12.95+deb12-amd64"
    assert kernel_of("/boot/initrd.img-6.8.0-90-generic") == "6.8.0-90-generic"
