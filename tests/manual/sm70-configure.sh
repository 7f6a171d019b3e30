#!/usr/bin/env bash
# Shows that the llama_cpp role's CMake arguments for
# llama_cpp_cuda_architectures: "70" target sm_70 with a real nvcc, on a
# machine without a GPU or NVIDIA's CUDA 12 (unreachable here): Debian 12's
# own nvidia-cuda-toolkit (nvcc 11.8, non-free) in the base test image.
# Configures llama.cpp 0c1e57098 with the arguments llama/build.py: build_plan
# returns, compiles one ggml-cuda kernel and lists its cubin/PTX architectures.
# Not part of scripts/test (a 2 GB toolkit download). Run from the repo root
# after scripts/test built the image and cached the source archive.
# Usage: tests/manual/sm70-configure.sh
set -euo pipefail
archive=${HOME}/.cache/v100-llm/llama-cpp-python-0.3.36/llama.cpp-0c1e570.tar.gz
.venv/bin/python - > /tmp/sm70-cmake-args.txt <<'PY'
import sys
sys.path.insert(0, "collections")  # this repository as the collection v100.llm
from ansible_collections.v100.llm.plugins.module_utils.llama import build
plan = build.build_plan(dict(
    requested_architectures="70", preflight_architectures=None, gpus=[], source_sha256="0" * 64,
    version="b0c1e570", build_number="", commit="0c1e57098bba43ac29e6e3b677cdceebdd22334f",
    fa_all_quants=False, ccache=False, extra_args=[], targets=["llama-server"], compiler="c++",
    nvcc="Cuda compilation tools, release 11.8, V11.8.89", prefix="/opt/llama.cpp"))
print("\n".join(plan["cmake_args"]))
PY
docker rm -f v100-sm70 >/dev/null 2>&1 || true
docker run -d --name v100-sm70 local/v100-debian12-systemd:latest sleep infinity >/dev/null
trap 'docker rm -f v100-sm70 >/dev/null' EXIT
docker cp "$archive" v100-sm70:/root/llama.cpp.tar.gz
docker cp /tmp/sm70-cmake-args.txt v100-sm70:/root/cmake-args.txt
docker exec v100-sm70 bash -euc '
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit cmake g++ make >/dev/null
nvcc --version | tail -2
mkdir -p /root/src && tar -xzf /root/llama.cpp.tar.gz -C /root/src
mapfile -t args < /root/cmake-args.txt
echo "cmake ${args[*]}"
cmake -S /root/src/llama.cpp -B /root/build "${args[@]}" | grep -iE "cuda" || true
grep -E "^CMAKE_CUDA_ARCHITECTURES|^GGML_CUDA:|^GGML_NATIVE" /root/build/CMakeCache.txt
grep -ho -- "--generate-code=[^ ]*" /root/build/ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/flags.make | sort -u
make -C /root/build/ggml/src/ggml-cuda norm.cu.o >/dev/null
cuobjdump -lelf -lptx /root/build/ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/norm.cu.o'
