// The public forward call on a real device: where the arguments live is queried and checked,
// the empty cases write (or leave) the outputs as documented, and a caller of the C ABI with its
// own struct (HOPATTN_ATTENTION_FWD_ARGS_INIT) gets the C++ call's result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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

// A raw C struct made with HOPATTN_ATTENTION_FWD_ARGS_INIT (what a C caller writes) runs through
// hopattn_attention_forward and gives bit for bit the C++ call's O and LSE on the same inputs (the
// fields after the header read where the caller wrote them: GQA, causal, a softmax scale, LSE).
// A caller built against a newer, larger header whose extra bytes are zero is accepted as well.
// (The refusals need no GPU and are host tests: struct_size 0 -> INVALID_ARGUMENT naming
// "args.struct_size", a smaller size -> INVALID_ARGUMENT, a larger one with a nonzero extra byte
// -> NOT_SUPPORTED, reserved != 0 -> INVALID_ARGUMENT naming "args.reserved".)
TEST(AttentionApiGpu, RawCStructWithInitMacroMatchesTheCppCall) {
  HOPATTN_REQUIRE_SM90();
  const int b = 2, sq = 77, sk = 300, hq = 4, hkv = 2, d = 128;
  const int64_t nq = int64_t(b) * sq * hq * d, nk = int64_t(b) * sk * hkv * d, nl = int64_t(b) * hq * sq;
  DeviceBuffer q(nq * 2), k(nk * 2), v(nk * 2), o_c(nq * 2), o_cpp(nq * 2), lse_c(nl * 4), lse_cpp(nl * 4);
  reference::fill_normal(q.get(), HOPATTN_DTYPE_BF16, nq, 21, 1.0f);
  reference::fill_normal(k.get(), HOPATTN_DTYPE_BF16, nk, 22, 1.0f);
  reference::fill_normal(v.get(), HOPATTN_DTYPE_BF16, nk, 23, 1.0f);
  auto fill = [&](auto* a, void* o, void* lse) {
    a->q = hopattn_tensor_bshd(q.get(), HOPATTN_DTYPE_BF16, b, sq, hq, d);
    a->k = hopattn_tensor_bshd(k.get(), HOPATTN_DTYPE_BF16, b, sk, hkv, d);
    a->v = hopattn_tensor_bshd(v.get(), HOPATTN_DTYPE_BF16, b, sk, hkv, d);
    a->o = hopattn_tensor_bshd(o, HOPATTN_DTYPE_BF16, b, sq, hq, d);
    a->lse = tensor_lse(static_cast<float*>(lse), b, hq, sq);
    a->softmax_scale = 0.07f;
    a->causal = 1;
  };
  AttentionForwardArgs cpp;
  fill(&cpp, o_cpp.get(), lse_cpp.get());
  reference::fill_nan(o_cpp.get(), 2, nq);
  reference::fill_nan(lse_cpp.get(), 4, nl);
  const Status s_cpp = attention_forward(cpp, nullptr);
  ASSERT_TRUE(s_cpp.ok()) << s_cpp.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> o_ref = reference::download_as_float(o_cpp.get(), HOPATTN_DTYPE_BF16, nq);
  const std::vector<float> lse_ref = reference::download_as_float(lse_cpp.get(), HOPATTN_DTYPE_FP32, nl);
  for (float x : o_ref) ASSERT_TRUE(std::isfinite(x)) << "the C++ call left O unwritten";

  auto expect_same = [&](const char* what) {
    const std::vector<float> o = reference::download_as_float(o_c.get(), HOPATTN_DTYPE_BF16, nq);
    const std::vector<float> lse = reference::download_as_float(lse_c.get(), HOPATTN_DTYPE_FP32, nl);
    EXPECT_EQ(std::memcmp(o.data(), o_ref.data(), o.size() * 4), 0) << what << ": O differs from the C++ call";
    EXPECT_EQ(std::memcmp(lse.data(), lse_ref.data(), lse.size() * 4), 0) << what << ": LSE differs from the C++ call";
  };

  // What a C caller writes. (-Wextra's missing-field-initializers warns on the macro's one-field
  // initializer list in C++: the other fields are zero, which is the point.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  hopattn_attention_fwd_args_t raw = HOPATTN_ATTENTION_FWD_ARGS_INIT;
#pragma GCC diagnostic pop
  EXPECT_EQ(raw.struct_size, sizeof(hopattn_attention_fwd_args_t));
  EXPECT_EQ(raw.reserved, 0u);
  fill(&raw, o_c.get(), lse_c.get());
  reference::fill_nan(o_c.get(), 2, nq);
  reference::fill_nan(lse_c.get(), 4, nl);
  const hopattn_status_t check = hopattn_attention_forward_check(&raw, nullptr);
  EXPECT_EQ(check.code, HOPATTN_OK) << check.message;
  hopattn_status_t s = hopattn_attention_forward(&raw, nullptr);
  ASSERT_EQ(s.code, HOPATTN_OK) << s.message;
  EXPECT_STREQ(s.message, "");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_same("HOPATTN_ATTENTION_FWD_ARGS_INIT");

  struct Newer {  // a later header's struct: this one's fields, then fields this library does not know
    hopattn_attention_fwd_args_t args;
    uint64_t later_fields[2];
  } newer;
  std::memset(&newer, 0, sizeof(newer));
  newer.args.struct_size = uint32_t(sizeof(Newer));
  fill(&newer.args, o_c.get(), lse_c.get());
  reference::fill_nan(o_c.get(), 2, nq);
  reference::fill_nan(lse_c.get(), 4, nl);
  s = hopattn_attention_forward(&newer.args, nullptr);
  ASSERT_EQ(s.code, HOPATTN_OK) << s.message;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_same("a larger struct_size with zero extra bytes");
}

}  // namespace
}  // namespace hopattn
