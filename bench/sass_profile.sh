#!/usr/bin/env bash
# The static profile of one variant's main kernel, on this machine, no GPU: the product's
# own NVRTC compile (scanforge compile: registers, spills, stack, shared memory), then
# the SASS loops and their instruction mix (bench/sass_loops.py), then where its registers
# are live (bench/live_registers.py: the peak a register cap must clear). Needs cuobjdump and
# nvdisasm: the CUDA toolkit's, or `pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`
# (docs/perf.md, "Static profiles").
# usage: bench/sass_profile.sh SPEC [ARCH]     (ARCH default sm_90; template changes are
#        read from SCANFORGE_TEMPLATE_DIR as by every scanforge command)
set -eu
spec=${1:?usage: bench/sass_profile.sh SPEC [ARCH]}
arch=${2:-sm_90}
here=$(cd "$(dirname "$0")" && pwd)
scanforge=${SCANFORGE:-$here/../build/scanforge}
cuobjdump=$(command -v cuobjdump || true)
if [ -z "$cuobjdump" ]; then
  for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))'); do
    for c in "$d"/nvidia/cu*/bin/cuobjdump; do [ -x "$c" ] && cuobjdump=$c; done
  done
fi
[ -n "$cuobjdump" ] || { echo "sass_profile.sh: no cuobjdump: install the CUDA toolkit's or 'pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm'" >&2; exit 2; }
export NVDISASM_PATH=${NVDISASM_PATH:-$(dirname "$cuobjdump")} # the pip wheels put both in one bin/
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$scanforge" compile "$spec" --arch "$arch" -o "$work/k.cubin" | grep -v "^size" | tee "$work/report"
"$cuobjdump" -sass "$work/k.cubin" > "$work/k.sass"
case "$spec" in *op=bwd*) kernel=sf_scan_bwd ;; *) kernel=sf_scan_fwd ;; esac
# (t, n) a pass of the block loop covers in the split=state kernels: items x dstate / threads,
# from the canonical spec the compile printed
per=$(awk '$1 == "compiled" { n = split($2, kv, ","); for (i = 1; i <= n; i++) { split(kv[i], p, "="); k[p[1]] = p[2] }
           if (k["split"] == "state") print k["items"] * k["dstate"] / k["threads"] }' "$work/report")
python3 "$here/sass_loops.py" "$work/k.sass" --kernel "$kernel" ${per:+--per $per}
"$NVDISASM_PATH/nvdisasm" --life-range-mode count "$work/k.cubin" > "$work/k.live"
python3 "$here/live_registers.py" "$work/k.live" --kernel "$kernel"
