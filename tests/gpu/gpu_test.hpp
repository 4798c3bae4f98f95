// Shared by the gpu tests: skip visibly (GTEST_SKIP, "Skipped" in CTest's summary) when the
// machine has no sm_90 GPU; run for real otherwise.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/cuda_check.hpp"

#define HOPATTN_REQUIRE_SM90()                                              \
  do {                                                                      \
    std::string hopattn_why_;                                               \
    if (!::hopattn::has_sm90_gpu(&hopattn_why_))                            \
      GTEST_SKIP() << "needs an sm_90 GPU (H100/H200): " << hopattn_why_;   \
  } while (0)
