#!/usr/bin/env bash
# install_deps.sh: installs the distribution packages the project needs and the machine lacks.
# The CUDA toolkit (nvcc, headers, cuBLAS) is not installed here (large, and not in Debian's main
# component): it says how to get it when it is missing. Both backends need it, even without a GPU.
set -euo pipefail
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDAToolkit_ROOT:-}" ]; then
  echo "the CUDA toolkit was not found (no nvcc on PATH nor in /usr/local/cuda): the project needs it even without a" \
       "GPU, for its headers. Debian: enable non-free, apt-get install nvidia-cuda-toolkit; Ubuntu: apt-get install" \
       "nvidia-cuda-toolkit; or NVIDIA's repository (https://developer.nvidia.com/cuda-downloads). Configure will" \
       "stop without it." >&2
fi
packages=(cmake ninja-build g++ libeigen3-dev catch2 libcli11-dev libboost-context-dev python3-matplotlib)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
((${#missing[@]})) || exit 0
if ! command -v apt-get >/dev/null; then
  echo "missing packages: ${missing[*]} (no apt-get here: install them, or set CMAKE_PREFIX_PATH)" >&2
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
if ! { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
  # A machine without a package registry may still have what it needs staged elsewhere
  # (CMAKE_PREFIX_PATH); configure will name anything still missing.
  echo "could not install ${missing[*]}; going on with what is here" >&2
fi
