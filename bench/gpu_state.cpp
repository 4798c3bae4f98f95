#include "gpu_state.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>

namespace hopattn::bench {
namespace {

// The few NVML entry points used, declared here so that no NVML header or library is needed to
// build: return codes are int (0 = NVML_SUCCESS), devices opaque pointers.
using NvmlDevice = void*;
using InitFn = int (*)();
using ByPciFn = int (*)(const char*, NvmlDevice*);
using ClockFn = int (*)(NvmlDevice, int, unsigned*);
using PowerFn = int (*)(NvmlDevice, unsigned*);
using TempFn = int (*)(NvmlDevice, int, unsigned*);
constexpr int kNvmlClockSm = 1;          // NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

struct Nvml {
  bool ok = false;
  ByPciFn by_pci = nullptr;
  ClockFn clock = nullptr;
  PowerFn power = nullptr;
  TempFn temp = nullptr;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml r;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return r;
    auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    r.by_pci = reinterpret_cast<ByPciFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    r.clock = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    r.power = reinterpret_cast<PowerFn>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    r.temp = reinterpret_cast<TempFn>(dlsym(lib, "nvmlDeviceGetTemperature"));
    r.ok = init != nullptr && r.by_pci != nullptr && r.clock != nullptr && r.power != nullptr &&
           r.temp != nullptr && init() == 0;
    return r;
  }();
  return n;
}

}  // namespace

GpuState sample_gpu_state(int device) {
  GpuState s;
  const Nvml& n = nvml();
  if (!n.ok) return s;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, int(sizeof(bus)), device) != cudaSuccess) return s;
  NvmlDevice dev = nullptr;
  if (n.by_pci(bus, &dev) != 0) return s;
  s.ok = n.clock(dev, kNvmlClockSm, &s.sm_mhz) == 0 && n.power(dev, &s.power_mw) == 0 &&
         n.temp(dev, kNvmlTemperatureGpu, &s.temp_c) == 0;
  return s;
}

std::string describe_gpu_states(const GpuState* states, int count) {
  unsigned lo[3] = {~0u, ~0u, ~0u}, hi[3] = {0, 0, 0};
  int seen = 0;
  for (int i = 0; i < count; ++i) {
    if (!states[i].ok) continue;
    const unsigned v[3] = {states[i].sm_mhz, states[i].power_mw / 1000, states[i].temp_c};
    for (int j = 0; j < 3; ++j) lo[j] = std::min(lo[j], v[j]), hi[j] = std::max(hi[j], v[j]);
    ++seen;
  }
  if (seen == 0) return "";
  char buf[96];
  auto range = [](unsigned a, unsigned b) {
    char r[24];
    if (a == b) std::snprintf(r, sizeof(r), "%u", a);
    else std::snprintf(r, sizeof(r), "%u-%u", a, b);
    return std::string(r);
  };
  std::snprintf(buf, sizeof(buf), "sm %s MHz, %s W, %s C", range(lo[0], hi[0]).c_str(), range(lo[1], hi[1]).c_str(),
                range(lo[2], hi[2]).c_str());
  return buf;
}

}  // namespace hopattn::bench
