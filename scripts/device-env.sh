# Sourced by the one-call device scripts (fp8-candidates.sh, paged-run.sh): the library links the
# device tool does not carry, cuDNN from PyTorch's environment when python3 has it (9.19 on the
# H200, where the system's is 9.14), and steps bounded by the call's time left.
#   source scripts/device-env.sh BUILD DEADLINE_S
# Sets LD_LIBRARY_PATH, cudnn_dir, cudnn_flag (bench's --cudnn-lib, or empty) and t0; defines
# left (seconds left, 10 kept) and bounded CAP CMD... (CMD under `timeout min(CAP, left)`; skipped
# under 20 s).
device_build=${1:?usage: source scripts/device-env.sh BUILD DEADLINE_S}
device_deadline=${2:?usage: source scripts/device-env.sh BUILD DEADLINE_S}
(cd "$device_build/lib" && ln -sf libhopattn.so.0.4.0 libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
[ -d "$device_build/python/hopattn" ] && (cd "$device_build/python/hopattn" && ln -sf ../../lib/libhopattn.so.0.4.0 libhopattn.so)
cudnn_dir=$(python3 -c 'import glob, os, site
d = [p for s in site.getsitepackages() for p in glob.glob(os.path.join(s, "nvidia", "cudnn", "lib"))]
print(d[0] if d else "")' 2>/dev/null)
export LD_LIBRARY_PATH=$device_build/lib${cudnn_dir:+:$cudnn_dir}:/usr/local/cuda/lib64
cudnn_flag=${cudnn_dir:+--cudnn-lib $cudnn_dir/libcudnn.so.9}
t0=$SECONDS
left() { echo $((device_deadline - (SECONDS - t0) - 10)); }
bounded() { local cap=$1; shift; local l; l=$(left); [ "$l" -gt "$cap" ] && l=$cap; [ "$l" -gt 20 ] && timeout "$l" "$@"; }
