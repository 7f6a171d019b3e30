"""Which initramfs images must be rebuilt so that they carry the modprobe.d file as it is on disk.

The initramfs loads modules before the root file system's modprobe.d is read,
so a blacklist holds at boot only once the image carries it: mkinitramfs
copies /etc/modprobe.d/*.conf into every image (initramfs-tools 0.142,
usr/sbin/mkinitramfs). Decided from each image (lsinitramfs) and its mtime,
not from whether this run changed the file, so a run killed between writing
the blacklist and rebuilding the images is repaired by the next one.
"""
from __future__ import annotations

import re
from typing import Dict, List


def kernel_of(image: str) -> str:
    """/boot/initrd.img-6.1.0-41-amd64 -> 6.1.0-41-amd64."""
    return re.sub(r"^.*/initrd\.img-", "", image)


def stale_images(images: Dict[str, Dict[str, object]], conf: str, conf_changed_at: float, wanted: bool) -> List[str]:
    """Kernel versions whose image to rebuild.

    images: path -> {"listing": lsinitramfs output, "mtime": seconds}.
    conf: the modprobe.d file (/etc/modprobe.d/blacklist-nouveau.conf);
    conf_changed_at: its ctime (0 when absent); wanted: it should be there.
    """
    inside = conf.lstrip("/")
    stale = []
    for path, image in sorted(images.items()):
        carried = inside in str(image["listing"]).splitlines()
        if carried != wanted or (wanted and conf_changed_at > float(image["mtime"])):
            stale.append(kernel_of(path))
    return stale
