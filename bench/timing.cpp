#include "timing.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "common/cuda_check.hpp"

namespace hopattn::bench {

Timing time_launches(const std::function<void()>& launch, Stream stream, double target_group_ms, int groups) {
  cudaEvent_t start, stop;
  HOPATTN_CUDA_CHECK(cudaEventCreate(&start));
  HOPATTN_CUDA_CHECK(cudaEventCreate(&stop));
  auto time_group = [&](int n) {
    HOPATTN_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < n; ++i) launch();
    HOPATTN_CUDA_CHECK(cudaEventRecord(stop, stream));
    HOPATTN_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    HOPATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return double(ms) / n;
  };
  time_group(2);  // warm-up: module load, graph building, clocks ramping
  const double estimate = time_group(3);
  Timing t;
  t.launches_per_group = int(std::clamp(target_group_ms / std::max(estimate, 1e-4), 2.0, 2000.0));
  std::vector<double> per_launch;
  for (int g = 0; g < groups; ++g) per_launch.push_back(time_group(t.launches_per_group));
  std::sort(per_launch.begin(), per_launch.end());
  t.groups = groups;
  t.median_ms = per_launch[per_launch.size() / 2];
  t.min_ms = per_launch.front();
  t.max_ms = per_launch.back();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

bool time_graph(const std::function<void()>& launch, Stream stream, int calls_per_graph, double target_group_ms,
                Timing* out, std::string* why) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::string failure;
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    failure = std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(err);
  } else {
    try {
      for (int i = 0; i < calls_per_graph; ++i) launch();
    } catch (const std::exception& e) {
      failure = std::string("a call failed while captured: ") + e.what();
    }
    err = cudaStreamEndCapture(stream, &graph);  // ends the capture whatever happened inside it
    if (failure.empty() && err != cudaSuccess) failure = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(err);
  }
  if (failure.empty()) {
    err = cudaGraphInstantiate(&exec, graph, 0);
    if (err != cudaSuccess) failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(err);
  }
  auto release = [&] {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  };
  if (!failure.empty()) {
    release();
    cudaGetLastError();  // clear the capture error so the next call starts clean
    *why = failure;
    return false;
  }
  Timing t;
  try {
    t = time_launches([&] { HOPATTN_CUDA_CHECK(cudaGraphLaunch(exec, stream)); }, stream, target_group_ms);
  } catch (...) {
    release();
    throw;
  }
  release();
  t.median_ms /= calls_per_graph;
  t.min_ms /= calls_per_graph;
  t.max_ms /= calls_per_graph;
  *out = t;
  return true;
}

}  // namespace hopattn::bench
