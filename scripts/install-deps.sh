#!/usr/bin/env bash
# Installs what building and testing scanforge needs on Debian/Ubuntu, skipping what is
# already there. The CUDA toolkit (nvcc headers, NVRTC) is expected at /usr/local/cuda.
set -euo pipefail

packages=(cmake make gcc pkg-config liblua5.4-dev libcriterion-dev libjansson-dev libxxhash-dev libcairo2-dev)
# clang builds the fuzz harnesses (scripts/fuzz.sh); Debian 12 ships libFuzzer's runtime
# (libclang_rt.fuzzer) in libclang-rt-dev, older releases inside clang's own packages.
packages+=(clang)
if apt-cache show libclang-rt-dev >/dev/null 2>&1; then packages+=(libclang-rt-dev); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -e /usr/local/cuda/include/nvrtc.h ] && ! command -v nvcc >/dev/null; then
  echo "warning: no CUDA toolkit found (need nvrtc.h and libnvrtc); install CUDA 12 or 13" >&2
fi
