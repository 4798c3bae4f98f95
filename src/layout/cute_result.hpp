// Internal to the CuTe bridge: wraps CuTe's answers as CuteRun. Includes CuTe.
#pragma once

#include <string>
#include <utility>

#include "cute_bridge.hpp"
#include "cute_convert.hpp"

namespace hopattn::layout::cute_result {

template <class CuteLayout>
CuteRun evaluated(const CuteLayout& layout) {
  CuteRun run;
  run.status = CuteStatus::kEvaluated;
  run.result = cute_convert::from_cute(layout);
  return run;
}

inline CuteRun rejected(std::string why) {
  CuteRun run;
  run.status = CuteStatus::kRejected;
  run.note = std::move(why);
  return run;
}

inline CuteRun unsupported(std::string why) {
  CuteRun run;
  run.status = CuteStatus::kUnsupported;
  run.note = std::move(why);
  return run;
}

}  // namespace hopattn::layout::cute_result
