// Timing with CUDA events: launches back to back (host overhead hidden behind the queue), in
// groups; the result is the median over groups of the per-launch time. time_graph replays a
// CUDA graph of captured launches instead (no per-launch host cost at all: decode-sized calls).
#pragma once

#include <functional>
#include <string>

#include "hopattn/hopattn.hpp"

namespace hopattn::bench {

struct Timing {
  double median_ms = 0;  // per launch
  double min_ms = 0;
  double max_ms = 0;
  int launches_per_group = 0;
  int groups = 0;
};

// `launch` enqueues one run on `stream` (and throws on error). Warms up, sizes the groups so
// each lasts about target_group_ms, and times `groups` groups.
Timing time_launches(const std::function<void()>& launch, Stream stream, double target_group_ms = 25.0,
                     int groups = 11);

// Captures `calls_per_graph` calls of `launch` on `stream` into one CUDA graph, then times the
// graph's replays with time_launches; the figures are per call (per replay / calls_per_graph).
// Returns false and says why when the calls cannot be captured or the graph instantiated (the
// stream is out of capture mode again and the non-sticky CUDA error cleared), so that the caller
// can fall back to time_launches. `launch` must have run once outside the capture (lazy set-up).
bool time_graph(const std::function<void()>& launch, Stream stream, int calls_per_graph, double target_group_ms,
                Timing* out, std::string* why);

}  // namespace hopattn::bench
