#!/usr/bin/env python3
"""Build a signed, flat apt repository that STANDS IN for NVIDIA's CUDA repo.

NVIDIA's repo (developer.download.nvidia.com) cannot be reached from CI. This
script builds, in one folder, a repo with the same layout (flat: the source is
``deb [signed-by=KEY] http://127.0.0.1:PORT/ /``), the package names and
dependency shape of NVIDIA's debian12 CUDA repo for driver versions 535.261.03,
550.54.15, 550.163.01 and 580.95.05, CUDA 12.1/12.4 and NCCL for CUDA 12.4 and 12.6, signed with a throwaway GPG key made at
build time. apt, its signature check, dpkg and update-alternatives then run for
real against it. What stands in: ``nvcc`` and ``nvidia-smi`` are shell scripts
that replay real recorded outputs (tests/fixtures/recorded/), and no package
carries a kernel module. See README.md next to this file.

    build_repo.py --out DIR [--recorded DIR] [--tamper]

Writes into DIR: the .debs, Packages, Packages.gz, Release, InRelease,
Release.gpg, repo-key.asc (the public key) and repo-key.fingerprint.
``--tamper`` changes one byte of the Packages hash in Release and in the
InRelease body after signing, so apt must refuse the repo.

Python 3.11 standard library only, plus the ``dpkg-deb`` and ``gpg`` commands.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
# In the project: molecule/shared/fixture_cuda_repo/ -> tests/fixtures/recorded/.
# Elsewhere (a copy in a container) pass --recorded.
DEFAULT_RECORDED = HERE.joinpath("..", "..", "..", "tests", "fixtures", "recorded").resolve()

NVCC_RECORDINGS = {
    "12.1": "nvcc--version_cuda12.1_V12.1.105.txt",
    "12.4": "nvcc--version_cuda12.4_V12.4.131.txt",
}
NVIDIA_SMI_RECORDING = "nvidia-smi_failed-to-communicate.txt"

MAINTAINER = "v100-llm test fixture <fixture-cuda-repo@example.invalid>"
KEY_UID = "v100-llm fixture CUDA repo (STAND-IN for NVIDIA's CUDA repo, tests only) <fixture-cuda-repo@example.invalid>"
STAND_IN_NOTE = (
    "STAND-IN built by molecule/shared/fixture_cuda_repo/build_repo.py for tests;"
    " it is not NVIDIA's package."
)
# Field order of a Packages stanza (what apt-ftparchive writes, roughly).
FIELD_ORDER = [
    "Package", "Version", "Architecture", "Maintainer", "Installed-Size",
    "Depends", "Provides", "Conflicts", "Section", "Priority",
    "Filename", "Size", "MD5sum", "SHA256", "Description",
]


@dataclass
class Package:
    name: str
    version: str
    summary: str
    details: str
    depends: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    provides: list[str] = field(default_factory=list)
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # path -> (content, mode)
    postinst: str = ""
    prerm: str = ""
    section: str = "multiverse/devel"


def _print_verbatim(text: str) -> str:
    """Shell lines that print ``text`` byte for byte (a quoted here-document)."""
    marker = "END_OF_RECORDING"
    if marker in text:
        raise ValueError(f"the recording contains {marker}")
    if text.endswith("\n"):
        return f"cat <<'{marker}'\n{text}{marker}\n"
    return f"printf '%s' {shlex.quote(text)}\n"


def nvidia_smi_stub(recording: str) -> str:
    return (
        "#!/bin/sh\n"
        "# STAND-IN for NVIDIA's nvidia-smi, from the fixture CUDA repo that stands in\n"
        "# for NVIDIA's apt repo in tests (molecule/shared/fixture_cuda_repo/).\n"
        "# Like the real nvidia-smi on a host or container where the NVIDIA kernel\n"
        "# module is not loaded, it prints the real recorded message\n"
        f"# (tests/fixtures/recorded/{NVIDIA_SMI_RECORDING}) and exits 9.\n"
        + _print_verbatim(recording)
        + "exit 9\n"
    )


def nvcc_stub(release: str, recording: str) -> str:
    return (
        "#!/bin/sh\n"
        "# STAND-IN for NVIDIA's nvcc, from the fixture CUDA repo that stands in for\n"
        "# NVIDIA's apt repo in tests (molecule/shared/fixture_cuda_repo/). It compiles\n"
        f"# nothing: `nvcc --version` prints the real recorded output of CUDA {release}\n"
        f"# (tests/fixtures/recorded/{NVCC_RECORDINGS[release]}).\n"
        'case "$1" in\n'
        "  --version|-V) ;;\n"
        '  *) echo "nvcc (stand-in for tests): only --version is answered" >&2; exit 1 ;;\n'
        "esac\n"
        + _print_verbatim(recording)
        + "exit 0\n"
    )


CUOBJDUMP_RECORDING = "cuobjdump-list-elf-list-ptx_no-device-code_cuda12.4.txt"


def cuobjdump_stub(recording: str) -> str:
    """NVIDIA's toolkit has bin/cuobjdump (cuda-cuobjdump-12-<minor>); llama_cpp refuses a CUDA build without it."""
    return (
        "#!/bin/sh\n"
        "# STAND-IN for NVIDIA's cuobjdump, from the fixture CUDA repo that stands in for\n"
        "# NVIDIA's apt repo in tests (molecule/shared/fixture_cuda_repo/). It reads\n"
        "# nothing: it prints the real recorded answer for a file without GPU code\n"
        f"# (tests/fixtures/recorded/{CUOBJDUMP_RECORDING}), naming the file it was given,\n"
        "# and exits 255 as cuobjdump does there.\n"
        'for file; do :; done\n'
        f"printf {shlex.quote(recording.replace('/bin/ls', '%s'))} \"$file\"\n"
        "exit 255\n"
    )


# Driver versions: two of branch 550 and a newer branch, as NVIDIA's debian12
# repository carries many versions of each branch side by side; and 535.261.03-1,
# the version Debian's bookworm has under the same unversioned names (libcuda1,
# nvidia-smi, ...): the strictest case for a host on nvidia_driver_source=distro
# with NVIDIA's repository added for the toolkit, where only the origin tells
# the two apart.
DRIVER_VERSIONS = ("535.261.03-1", "550.54.15-1", "550.163.01-1", "580.95.05-1")


def driver_packages(version: str, smi: str) -> list[Package]:
    """One driver version in the shape of NVIDIA's debian12 repository.

    Unversioned names bound by exact-version Depends (``(= ${binary:Version})``,
    NVIDIA/debian-packaging-nvidia-driver debian/control.in), and a
    ``cuda-drivers-<branch>`` whose Depends are lower bounds only (as NVIDIA's
    cuda-drivers-580: ``nvidia-driver (>= 580.65.06), ...``), so apt on its own
    takes the newest version of everything.
    """
    upstream = version.split("-")[0]
    branch = upstream.split(".")[0]
    exact = f"(= {version})"
    return [
        Package(
            name=f"cuda-drivers-{branch}", version=version, section="metapackages",
            summary=f"CUDA driver meta-package, branch {branch} (stand-in)",
            details="Lower-bound Depends on the driver packages, as NVIDIA's cuda-drivers-<branch>.",
            depends=[f"nvidia-driver-cuda (>= {upstream})", f"nvidia-kernel-dkms (>= {upstream})"],
        ),
        Package(
            name="nvidia-driver-cuda", version=version, section="non-free/libs",
            summary="NVIDIA driver CUDA integration components (stand-in)",
            details="Pulls the CUDA driver library, nvidia-smi and nvidia-persistenced at this version.",
            depends=[f"libcuda1 {exact}", f"nvidia-smi {exact}", f"nvidia-persistenced {exact}",
                     f"nvidia-alternative {exact}"],
        ),
        Package(
            name="nvidia-alternative", version=version, section="non-free/libs",
            summary="Allows the selection of NVIDIA as GLX provider (stand-in, empty)",
            details="Every library of the version depends on it with (= version).",
        ),
        Package(
            name="libcuda1", version=version, section="non-free/libs",
            summary="NVIDIA CUDA Driver Library (stand-in, no library)",
            details="Unversioned name, exact-version Depends, as NVIDIA's and Debian's libcuda1.",
            depends=[f"nvidia-alternative {exact}"],
            provides=[f"libcuda.so.1 (= {upstream})"],
        ),
        Package(
            name="libnvidia-ml1", version=version, section="non-free/libs",
            summary="NVIDIA Management Library (stand-in, no library)",
            details="Unversioned name, exact-version Depends.",
            depends=[f"nvidia-alternative {exact}"],
        ),
        Package(
            name="nvidia-smi", version=version, section="non-free/utils",
            summary="NVIDIA System Management Interface (stand-in)",
            details=(
                "Ships /usr/bin/nvidia-smi as a stand-in script that replays the real\n"
                "recorded \"couldn't communicate with the NVIDIA driver\" message and exits 9,\n"
                "as the real one does where the kernel module is not loaded."
            ),
            depends=[f"nvidia-alternative {exact}", f"libnvidia-ml1 {exact}"],
            files={"usr/bin/nvidia-smi": (smi, 0o755)},
        ),
        Package(
            name="nvidia-persistenced", version=version, section="non-free/utils",
            summary="NVIDIA Persistence Daemon (stand-in)",
            details=(
                "Ships nvidia-persistenced.service (started with --no-persistence-mode);\n"
                "/usr/bin/nvidia-persistenced is a stand-in that exits 1, as there is no\n"
                "kernel module to keep initialised."
            ),
            depends=[f"libnvidia-ml1 {exact}"],
            files={
                "usr/bin/nvidia-persistenced": (
                    "#!/bin/sh\n# STAND-IN for NVIDIA's nvidia-persistenced (fixture CUDA repo, tests only).\n"
                    "echo 'nvidia-persistenced (stand-in): no NVIDIA kernel module here' >&2\nexit 1\n", 0o755),
                "lib/systemd/system/nvidia-persistenced.service": (
                    "[Unit]\nDescription=NVIDIA Persistence Daemon\nWants=syslog.target\n\n"
                    "[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced"
                    " --no-persistence-mode --verbose\nExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced\n\n"
                    "[Install]\nWantedBy=multi-user.target\n", 0o644),
            },
        ),
        Package(
            name="firmware-nvidia-gsp", version=version, section="non-free-firmware/kernel",
            summary="NVIDIA GSP firmware (stand-in, empty)",
            details="Provides firmware-nvidia-gsp-<version>, as the real package does.",
            provides=[f"firmware-nvidia-gsp-{upstream}"],
        ),
        Package(
            name="nvidia-kernel-dkms", version=version, section="non-free/kernel",
            summary="NVIDIA binary kernel module DKMS source (empty stand-in)",
            details="Empty stand-in: no kernel module source, nothing is built by DKMS.",
            depends=[f"firmware-nvidia-gsp {exact} | firmware-nvidia-gsp-{upstream}", f"nvidia-alternative {exact}"],
            conflicts=["nvidia-kernel-open-dkms"],
            # The real postinst runs `dkms install`, minutes of compiling during
            # dpkg's configure step. The kill harness (tests/kill) cuts the power
            # there: on its hosts (/etc/v100-test/mark-dkms-step) this stand-in
            # leaves a marker that says the step has started, and holds the step
            # while the harness asks (the hold is on /run, which a power cut
            # empties; at most 15 minutes, should the cut never come).
            postinst=(
                "#!/bin/sh\nset -e\n"
                "if [ \"$1\" = configure ] && [ -e /etc/v100-test/mark-dkms-step ]; then\n"
                "  mkdir -p /var/lib/v100-test && touch /var/lib/v100-test/dkms-started\n"
                "  held=0\n"
                "  while [ -e /run/v100-test/hold-dkms ] && [ $held -lt 900 ]; do sleep 1; held=$((held + 1)); done\nfi\n"
            ),
        ),
        Package(
            name="nvidia-kernel-open-dkms", version=version, section="non-free/kernel",
            summary="NVIDIA open kernel module DKMS source (empty stand-in)",
            details=(
                "Present so tests can check that the open flavour is never installed:\n"
                "open kernel modules need GSP, which Volta (V100) does not have."
            ),
            depends=[f"firmware-nvidia-gsp {exact}", f"nvidia-alternative {exact}"],
            conflicts=["nvidia-kernel-dkms"],
        ),
        Package(
            name="nvidia-modprobe", version=version, section="contrib/utils",
            summary="Load the NVIDIA kernel modules and create their device files (stand-in)",
            details=(
                "NVIDIA's repo ships one per driver version. /usr/bin/nvidia-modprobe is a\n"
                "stand-in that exits 1, as there is no kernel module to load here."
            ),
            files={
                "usr/bin/nvidia-modprobe": (
                    "#!/bin/sh\n# STAND-IN for NVIDIA's nvidia-modprobe (fixture CUDA repo, tests only).\n"
                    "echo 'nvidia-modprobe (stand-in): no NVIDIA kernel module here' >&2\nexit 1\n", 0o755),
            },
        ),
    ]


# NCCL as NVIDIA builds it for several CUDA releases (version X.Y.Z-REV+cudaA.B: NVIDIA/nccl
# pkg/debian/changelog.in; libnccl-dev depends on libnccl2 at the same version and ships nccl.h and libnccl.so:
# pkg/debian/control.in, libnccl-dev.install.in). Two builds for 12.4 and a newer one for 12.6, so that the
# newest in the repository is not the one for the toolkit.
NCCL_VERSIONS = ("2.20.5-1+cuda12.4", "2.21.5-1+cuda12.4", "2.23.4-1+cuda12.6")


def nccl_packages(version: str) -> list[Package]:
    upstream = version.split("-")[0]
    lib = "usr/lib/x86_64-linux-gnu"
    placeholder = f"Placeholder for NCCL {upstream}. {STAND_IN_NOTE}\n"
    return [
        Package(name="libnccl2", version=version, section="libs",
                summary="NVIDIA Collective Communication Library (NCCL) Runtime (stand-in)",
                details="A placeholder libnccl.so.2, not NCCL.",
                files={f"{lib}/libnccl.so.2": (placeholder, 0o644)}),
        Package(name="libnccl-dev", version=version, section="libdevel",
                summary="NVIDIA Collective Communication Library (NCCL) Development Files (stand-in)",
                details="A placeholder nccl.h and libnccl.so, not NCCL.",
                depends=[f"libnccl2 (= {version})"],
                files={"usr/include/nccl.h": (f"/* {placeholder.strip()} */\n", 0o644),
                       f"{lib}/libnccl.so": (placeholder, 0o644)}),
    ]


def package_set(recorded: Path) -> list[Package]:
    """The packages, named and related as in NVIDIA's debian12 CUDA repository."""
    smi = nvidia_smi_stub((recorded / NVIDIA_SMI_RECORDING).read_text())
    pkgs: list[Package] = [p for version in DRIVER_VERSIONS for p in driver_packages(version, smi)]
    pkgs += [p for version in NCCL_VERSIONS for p in nccl_packages(version)]
    for release, version in {"12.1": "12.1.1-1", "12.4": "12.4.1-1"}.items():
        dash = release.replace(".", "-")
        prefix = f"/usr/local/cuda-{release}"
        priority = release.replace(".", "")
        nvcc = nvcc_stub(release, (recorded / NVCC_RECORDINGS[release]).read_text())
        cuobjdump = cuobjdump_stub((recorded / CUOBJDUMP_RECORDING).read_text())
        pkgs.append(Package(
            name=f"cuda-toolkit-{dash}", version=version,
            summary=f"CUDA Toolkit {release} meta-package (stand-in)",
            details=(
                f"Installs into {prefix}: bin/nvcc is a stand-in script that replays the\n"
                f"real recorded `nvcc --version` of CUDA {release}; lib64/ holds a placeholder.\n"
                "Registers /usr/local/cuda (alternative `cuda`) and /usr/local/cuda-12\n"
                "(alternative `cuda-12`) like NVIDIA's toolkit packages. Depends on no driver."
            ),
            files={
                f"{prefix[1:]}/bin/nvcc": (nvcc, 0o755),
                f"{prefix[1:]}/bin/cuobjdump": (cuobjdump, 0o755),
                f"{prefix[1:]}/lib64/STAND-IN.txt": (
                    f"Placeholder for CUDA {release}'s libraries. {STAND_IN_NOTE}\n", 0o644),
                f"{prefix[1:]}/version.json": (
                    f'{{"cuda": {{"name": "CUDA SDK", "version": "{version.split("-")[0]}"}}}}\n', 0o644),
            },
            postinst=(
                "#!/bin/sh\nset -e\n"
                'if [ "$1" = configure ]; then\n'
                f"    update-alternatives --install /usr/local/cuda cuda {prefix} {priority}\n"
                f"    update-alternatives --install /usr/local/cuda-12 cuda-12 {prefix} {priority}\n"
                "fi\n"
            ),
            prerm=(
                "#!/bin/sh\nset -e\n"
                'if [ "$1" = remove ] || [ "$1" = deconfigure ]; then\n'
                f"    update-alternatives --remove cuda {prefix}\n"
                f"    update-alternatives --remove cuda-12 {prefix}\n"
                "fi\n"
            ),
        ))
    return pkgs


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs)


def build_deb(pkg: Package, work: Path, out: Path) -> Path:
    root = work / f"{pkg.name}_{pkg.version}"
    (root / "DEBIAN").mkdir(parents=True)
    for rel, (content, mode) in pkg.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod(mode)
    doc = root / "usr/share/doc" / pkg.name / "STAND-IN"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(STAND_IN_NOTE + "\n")
    for script in ("postinst", "prerm"):
        text = getattr(pkg, script)
        if text:
            (root / "DEBIAN" / script).write_text(text)
            (root / "DEBIAN" / script).chmod(0o755)
    size_kib = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) // 1024 + 1
    fields = {
        "Package": pkg.name,
        "Version": pkg.version,
        "Architecture": "amd64",
        "Maintainer": MAINTAINER,
        "Installed-Size": str(size_kib),
        "Depends": ", ".join(pkg.depends),
        "Provides": ", ".join(pkg.provides),
        "Conflicts": ", ".join(pkg.conflicts),
        "Section": pkg.section,
        "Priority": "optional",
        "Description": pkg.summary + "\n" + "\n".join(
            " " + (line or ".") for line in (pkg.details + "\n\n" + STAND_IN_NOTE).splitlines()),
    }
    (root / "DEBIAN" / "control").write_text(
        "".join(f"{k}: {v}\n" for k, v in fields.items() if v))
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    deb = out / f"{pkg.name}_{pkg.version}_amd64.deb"
    _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)],
         env={**os.environ, "SOURCE_DATE_EPOCH": "1700000000"})
    return deb


def parse_control(text: str) -> dict[str, str]:
    """A control paragraph as {field: value}; continuation lines stay in the value."""
    fields: dict[str, str] = {}
    name = ""
    for line in text.splitlines():
        if line[:1] in (" ", "\t") and name:
            fields[name] += "\n" + line
        elif ":" in line:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return fields


def packages_stanza(deb: Path) -> str:
    """The Packages entry for a built .deb, read back from the .deb itself."""
    fields = parse_control(_run(["dpkg-deb", "--field", str(deb)]).stdout)
    data = deb.read_bytes()
    fields.update({
        "Filename": f"./{deb.name}",
        "Size": str(len(data)),
        "MD5sum": hashlib.md5(data, usedforsecurity=False).hexdigest(),
        "SHA256": hashlib.sha256(data).hexdigest(),
    })
    ordered = [k for k in FIELD_ORDER if k in fields] + [k for k in fields if k not in FIELD_ORDER]
    return "".join(f"{k}: {fields[k]}\n" for k in ordered)


def release_text(out: Path, index_files: list[str]) -> str:
    lines = [
        "Origin: NVIDIA",
        "Label: NVIDIA CUDA",
        "Architectures: amd64",
        f"Date: {format_datetime(datetime.now(timezone.utc).replace(microsecond=0), usegmt=True)}",
        "Description: STAND-IN for NVIDIA's CUDA apt repository, for tests only"
        " (molecule/shared/fixture_cuda_repo)",
    ]
    for title, algo in (("MD5Sum", "md5"), ("SHA256", "sha256")):
        lines.append(f"{title}:")
        for name in index_files:
            data = (out / name).read_bytes()
            lines.append(f" {hashlib.new(algo, data).hexdigest()} {len(data):>8} {name}")
    return "\n".join(lines) + "\n"


class ThrowawayKey:
    """A GPG signing key that lives in a temporary GNUPGHOME, no passphrase."""

    def __init__(self) -> None:
        # Short path: gpg-agent's socket path must stay under ~100 characters.
        self.home = Path(tempfile.mkdtemp(prefix="fxgpg-", dir="/tmp"))
        self.home.chmod(0o700)
        self.env = {**os.environ, "GNUPGHOME": str(self.home)}
        self.fingerprint = ""

    def gpg(self, *args: str) -> subprocess.CompletedProcess:
        return _run(["gpg", "--batch", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", "",
                     *args], env=self.env)

    def generate(self) -> str:
        self.gpg("--quick-generate-key", KEY_UID, "ed25519", "sign", "never")
        colons = self.gpg("--with-colons", "--list-keys").stdout
        self.fingerprint = next(line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:"))
        return self.fingerprint

    def export(self, dest: Path) -> None:
        dest.write_text(self.gpg("--armor", "--export", self.fingerprint).stdout)

    def sign(self, release: Path, inrelease: Path, detached: Path) -> None:
        common = ["--yes", "--local-user", self.fingerprint, "--digest-algo", "SHA512"]
        self.gpg(*common, "--clearsign", "--output", str(inrelease), str(release))
        self.gpg(*common, "--armor", "--detach-sign", "--output", str(detached), str(release))

    def close(self) -> None:
        subprocess.run(["gpgconf", "--kill", "all"], env=self.env, capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)


def tamper(path: Path) -> None:
    """Change one hex digit of the first hash line naming `Packages` (not .gz)."""
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        parts = line.split()
        if line.startswith(" ") and len(parts) == 3 and parts[2] == "Packages" and len(parts[0]) == 64:
            digit = parts[0][0]
            lines[i] = line.replace(parts[0], ("0" if digit != "0" else "1") + parts[0][1:], 1)
            path.write_text("\n".join(lines))
            return
    raise SystemExit(f"no SHA256 line for Packages in {path}")


def build(out: Path, recorded: Path, tampered: bool = False) -> str:
    """Build the repo into ``out``; return the signing key's fingerprint."""
    missing = [tool for tool in ("dpkg-deb", "gpg", "gpgconf") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"build_repo.py needs {', '.join(missing)} (Debian: dpkg, gnupg)")
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fixture-cuda-repo-"))
    key = ThrowawayKey()
    try:
        stanzas = [packages_stanza(build_deb(pkg, work, out)) for pkg in package_set(recorded)]
        packages = "\n".join(stanzas)
        (out / "Packages").write_text(packages)
        with gzip.GzipFile(out / "Packages.gz", "wb", mtime=0) as gz:
            gz.write(packages.encode())
        (out / "Release").write_text(release_text(out, ["Packages", "Packages.gz"]))
        fingerprint = key.generate()
        key.export(out / "repo-key.asc")
        (out / "repo-key.fingerprint").write_text(fingerprint + "\n")
        key.sign(out / "Release", out / "InRelease", out / "Release.gpg")
        if tampered:
            tamper(out / "Release")
            tamper(out / "InRelease")
        return fingerprint
    finally:
        key.close()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to build the repo in")
    parser.add_argument("--recorded", type=Path, default=DEFAULT_RECORDED,
                        help="folder with the recorded nvcc / nvidia-smi outputs (default: %(default)s)")
    parser.add_argument("--tamper", action="store_true",
                        help="after signing, change one byte of the Packages hash in Release and InRelease")
    args = parser.parse_args(argv)
    fingerprint = build(args.out, args.recorded, args.tamper)
    print(f"built {'TAMPERED ' if args.tamper else ''}fixture CUDA repo in {args.out}, key {fingerprint}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
