// The GPU's SM clock, power draw and temperature, sampled through NVML for the bench's rows (the
// same kernel timed twice in one run can differ by several per cent: docs/perf-log.md, r80-r82).
// NVML is loaded at run time (dlopen of the driver's libnvidia-ml.so.1): a machine without it
// gets ok = false and the bench runs as before.
#pragma once

#include <string>

namespace hopattn::bench {

struct GpuState {
  bool ok = false;
  unsigned sm_mhz = 0, power_mw = 0, temp_c = 0;
};

// The state of the CUDA device `device` now (NVML found by its PCI bus id).
GpuState sample_gpu_state(int device);

// "sm 1755-1980 MHz, 610-690 W, 51-55 C" over the samples that are ok, or "" when none is.
std::string describe_gpu_states(const GpuState* states, int count);

}  // namespace hopattn::bench
