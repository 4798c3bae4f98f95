// The public forward call on a real device: where the arguments live is queried and checked,
// and the empty cases write (or leave) the outputs as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "attention/device/compiled_set.hpp"
#include "device_utils.hpp"
#include "gpu_test.hpp"

namespace hopattn {
namespace {

using reference::DeviceBuffer;

TEST(AttentionApiGpu, HostPointerIsRejected) {
  HOPATTN_REQUIRE_SM90();
  DeviceBuffer k(2 * 64 * 128 * 2), v(2 * 64 * 128 * 2), o(2 * 64 * 128 * 2);
  std::vector<uint16_t> host_q(2 * 64 * 128, 0x3f80);
  AttentionForwardArgs a{};
  a.q = tensor_bshd(host_q.data(), HOPATTN_DTYPE_BF16, 2, 64, 1, 128);
  a.k = tensor_bshd(k.get(), HOPATTN_DTYPE_BF16, 2, 64, 1, 128);
  a.v = tensor_bshd(v.get(), HOPATTN_DTYPE_BF16, 2, 64, 1, 128);
  a.o = tensor_bshd(o.get(), HOPATTN_DTYPE_BF16, 2, 64, 1, 128);
  const Status s = attention_forward(a, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("q: points to host memory"), std::string::npos) << s.to_string();
}

TEST(AttentionApiGpu, NoKeysWritesZeroAndMinusInfLse) {
  HOPATTN_REQUIRE_SM90();
  // O lives in padded rows (row stride 144 elements): the pads must stay poisoned.
  const int b = 2, sq = 33, h = 3, d = 128, row = 144;
  DeviceBuffer q(b * sq * h * d * 2), o(b * sq * h * row * 2), lse(b * h * sq * 4);
  reference::fill_normal(q.get(), HOPATTN_DTYPE_FP16, b * sq * h * d, 5, 1.0f);
  reference::fill_nan(o.get(), 2, b * sq * h * row);
  reference::fill_nan(lse.get(), 4, b * h * sq);
  AttentionForwardArgs a{};
  a.q = tensor_bshd(q.get(), HOPATTN_DTYPE_FP16, b, sq, h, d);
  a.k = tensor_bshd(nullptr, HOPATTN_DTYPE_FP16, b, 0, 1, d);
  a.v = tensor_bshd(nullptr, HOPATTN_DTYPE_FP16, b, 0, 1, d);
  a.o = tensor_bshd(o.get(), HOPATTN_DTYPE_FP16, b, sq, h, d);
  a.o.stride[2] = row, a.o.stride[1] = h * row, a.o.stride[0] = sq * h * row;
  a.lse = tensor_lse(lse.as<float>(), b, h, sq);
  const Status s = attention_forward(a, nullptr);
  ASSERT_TRUE(s.ok()) << s.to_string();
  const auto ho = reference::download_as_float(o.get(), HOPATTN_DTYPE_FP16, b * sq * h * row);
  const auto hl = reference::download_as_float(lse.get(), HOPATTN_DTYPE_FP32, b * h * sq);
  for (int64_t r = 0; r < int64_t(b) * sq * h; ++r)
    for (int i = 0; i < row; ++i) {
      const float x = ho[r * row + i];
      if (i < d) ASSERT_EQ(x, 0.0f) << "O row " << r << " element " << i;
      else ASSERT_TRUE(std::isnan(x)) << "padding of row " << r << " was written";
    }
  for (float x : hl) ASSERT_EQ(x, -std::numeric_limits<float>::infinity());
}

TEST(AttentionApiGpu, NoQueriesIsANoOp) {
  HOPATTN_REQUIRE_SM90();
  DeviceBuffer k(64 * 128 * 2), v(64 * 128 * 2), lse(16);
  reference::fill_normal(k.get(), HOPATTN_DTYPE_BF16, 64 * 128, 1, 1.0f);
  reference::fill_normal(v.get(), HOPATTN_DTYPE_BF16, 64 * 128, 2, 1.0f);
  AttentionForwardArgs a{};
  a.q = tensor_bshd(nullptr, HOPATTN_DTYPE_BF16, 1, 0, 2, 128);
  a.o = tensor_bshd(nullptr, HOPATTN_DTYPE_BF16, 1, 0, 2, 128);
  a.k = tensor_bshd(k.get(), HOPATTN_DTYPE_BF16, 1, 64, 1, 128);
  a.v = tensor_bshd(v.get(), HOPATTN_DTYPE_BF16, 1, 64, 1, 128);
  const Status s = attention_forward(a, nullptr);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(AttentionApiGpu, StreamOfTheCurrentDeviceIsAccepted) {
  HOPATTN_REQUIRE_SM90();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  DeviceBuffer q(64 * 128 * 2), k(64 * 128 * 2), v(64 * 128 * 2), o(64 * 128 * 2);
  AttentionForwardArgs a{};
  a.q = tensor_bshd(q.get(), HOPATTN_DTYPE_BF16, 1, 64, 1, 128);
  a.k = tensor_bshd(k.get(), HOPATTN_DTYPE_BF16, 1, 64, 1, 128);
  a.v = tensor_bshd(v.get(), HOPATTN_DTYPE_BF16, 1, 64, 1, 128);
  a.o = tensor_bshd(o.get(), HOPATTN_DTYPE_BF16, 1, 64, 1, 128);
  const hopattn_status_t s = hopattn_attention_forward_check(&a, stream);
  EXPECT_EQ(s.code, HOPATTN_OK) << s.message;
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace hopattn
