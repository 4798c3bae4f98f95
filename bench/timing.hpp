// Timing with CUDA events: launches back to back (host overhead hidden behind the queue), in
// groups; the result is the median over groups of the per-launch time.
#pragma once

#include <functional>

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

}  // namespace hopattn::bench
