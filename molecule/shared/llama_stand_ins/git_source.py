#!/usr/bin/env python3
"""Make a bare git repository of the llama.cpp tree in an archive made by
pack_source.py, ready for git's plain ("dumb") HTTP transport, and write its
commit id to OUT.git.commit.

The repository STANDS IN for a git mirror of llama.cpp (GitHub is unreachable
from CI): its one commit holds the real llama.cpp tree of the archive (upstream
commit 0c1e57098), under an id of its own. Author, committer and dates are
fixed, so the commit id is the same on every machine and run.

    git_source.py ARCHIVE.tar.gz OUT.git
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "v100-llm stand-in", "GIT_AUTHOR_EMAIL": "stand-in@localhost",
    "GIT_COMMITTER_NAME": "v100-llm stand-in", "GIT_COMMITTER_EMAIL": "stand-in@localhost",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00+0000",
    # No user or system configuration (hooks, templates, signing) leaks in.
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path) -> str:
    env = dict(os.environ, **IDENTITY)
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make(archive: Path, out: Path) -> str:
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        with tarfile.open(archive) as source:
            source.extractall(work, filter="tar")
        tree = work / "llama.cpp"
        git("init", "--quiet", "--template=", "--initial-branch=master", cwd=tree)
        git("add", "--all", cwd=tree)
        git("commit", "--quiet", "--no-gpg-sign", "-m", "llama.cpp 0c1e57098 (vendored by llama-cpp-python 0.3.36)",
            cwd=tree)
        commit = git("rev-parse", "HEAD", cwd=tree)
        staging = out.with_name(out.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        git("clone", "--quiet", "--bare", "--template=", str(tree), str(staging), cwd=work)
        git("repack", "-a", "-d", "--quiet", cwd=staging)
        git("update-server-info", cwd=staging)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    Path(str(out) + ".commit").write_text(commit + "\n")
    return commit


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(make(Path(sys.argv[1]), Path(sys.argv[2])))
