// Every argument rule of the forward attention API, checked without a GPU: each test breaks one
// rule of an otherwise valid call and expects the error that names the argument. Removing a
// check makes its test fail (the call then passes, or fails later with another message).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "attention/device/compiled_set.hpp"
#include "attention/experimental.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn {
namespace {

void* fake_ptr(uintptr_t addr) { return reinterpret_cast<void*>(addr); }

// A valid GQA call: q/o (2, 100, 8, 128), k/v (2, 300, 2, 128), bf16, with LSE; the pointers are
// never dereferenced by the checks, so distinct fake addresses far apart stand in for memory.
AttentionForwardArgs valid_args() {
  AttentionForwardArgs a{};
  a.q = tensor_bshd(fake_ptr(0x10000000), HOPATTN_DTYPE_BF16, 2, 100, 8, 128);
  a.k = tensor_bshd(fake_ptr(0x20000000), HOPATTN_DTYPE_BF16, 2, 300, 2, 128);
  a.v = tensor_bshd(fake_ptr(0x30000000), HOPATTN_DTYPE_BF16, 2, 300, 2, 128);
  a.o = tensor_bshd(fake_ptr(0x40000000), HOPATTN_DTYPE_BF16, 2, 100, 8, 128);
  a.lse = tensor_lse(static_cast<float*>(fake_ptr(0x50000000)), 2, 8, 100);
  a.causal = 1;
  return a;
}

Status check(const AttentionForwardArgs& a, DeviceContext ctx = {}) { return check_attention_forward(a, ctx); }

void expect_error(const Status& s, StatusCode code, const std::string& needle) {
  EXPECT_FALSE(s.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message '" << s.message() << "' does not mention '" << needle << "'";
}

TEST(AttentionChecks, ValidCallPasses) {
  const Status s = check(valid_args());
  EXPECT_TRUE(s.ok()) << s.to_string();
  AttentionForwardArgs a = valid_args();
  a.lse = Tensor{};  // LSE is optional
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

// Issue 38's crash and acceptance classes: an out-of-range dtype (was a division by a zero
// element size), extents whose product or largest offset overflows int64 (was "empty", with a
// NULL pointer accepted), outputs whose strides make elements overlap.
TEST(AttentionChecks, HostileValues) {
  AttentionForwardArgs a = valid_args();
  for (int bad : {-1, 6, 77, 1 << 30}) {
    a = valid_args();
    a.k.dtype = hopattn_dtype_t(bad);
    expect_error(check(a), StatusCode::kInvalidArgument, "k.dtype = " + std::to_string(bad) + " is not a hopattn_dtype_t value");
  }
  a = valid_args();
  for (Tensor* t : {&a.q, &a.k, &a.v, &a.o}) t->shape[0] = INT32_MAX;  // batch * seqlen * heads beyond int64
  a.q.shape[1] = a.o.shape[1] = INT32_MAX;
  a.q.shape[2] = a.o.shape[2] = INT32_MAX - 1;  // a multiple of k's 2 heads
  expect_error(check(a), StatusCode::kInvalidArgument, "q: batch * seqlen_q * heads_q = 9223372036854775807 exceeds 2^31-1");
  a = valid_args();
  a.k.shape[1] = INT32_MAX;           // (2^31 - 2) * 2^39 elements: past 64-bit byte offsets
  a.k.stride[1] = int64_t(1) << 39;
  expect_error(check(a), StatusCode::kInvalidArgument, "k: the largest element offset overflows 64-bit byte addressing");
  a = valid_args();
  a.o.stride[1] = 0;  // every query row writes the same memory
  expect_error(check(a), StatusCode::kInvalidArgument, "o.stride[1] = 0 makes elements overlap");
  a = valid_args();
  a.o.stride[2] = 64;  // heads 64 elements apart, hdim 128: neighbouring heads overlap
  a.o.stride[1] = 8 * 64;
  a.o.stride[0] = 100 * 8 * 64;
  expect_error(check(a), StatusCode::kInvalidArgument, "makes elements overlap");
  a = valid_args();
  a.lse.stride[2] = 0;
  expect_error(check(a), StatusCode::kInvalidArgument, "lse.stride[2] = 0 makes elements overlap");
}

TEST(AttentionChecks, NullPointers) {
  const char* names[4] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; ++i) {
    AttentionForwardArgs a = valid_args();
    Tensor* t[4] = {&a.q, &a.k, &a.v, &a.o};
    t[i]->data = nullptr;
    expect_error(check(a), StatusCode::kInvalidArgument, std::string(names[i]) + ": data pointer is null");
  }
}

TEST(AttentionChecks, UnsupportedDtypeListsSupported) {
  AttentionForwardArgs a = valid_args();
  a.q.dtype = a.k.dtype = a.v.dtype = a.o.dtype = HOPATTN_DTYPE_FP32;
  const Status s = check(a);
  expect_error(s, StatusCode::kNotSupported, "dtype fp32 is not supported");
  EXPECT_NE(s.message().find("supported: "), std::string::npos) << s.message();
}

TEST(AttentionChecks, UnsupportedHeadDimListsSupported) {
  AttentionForwardArgs a = valid_args();
  for (Tensor* t : {&a.q, &a.k, &a.v, &a.o}) *t = tensor_bshd(t->data, t->dtype, t->shape[0], t->shape[1], t->shape[2], 96);
  const Status s = check(a);
  expect_error(s, StatusCode::kNotSupported, "head dim 96 is not supported");
  EXPECT_NE(s.message().find("supported: "), std::string::npos) << s.message();
}

TEST(AttentionChecks, DtypeMismatch) {
  const char* names[3] = {"k", "v", "o"};
  for (int i = 0; i < 3; ++i) {
    AttentionForwardArgs a = valid_args();
    Tensor* t[3] = {&a.k, &a.v, &a.o};
    t[i]->dtype = HOPATTN_DTYPE_FP16;
    expect_error(check(a), StatusCode::kInvalidArgument, std::string(names[i]) + ": dtype fp16 does not match q's bf16");
  }
}

TEST(AttentionChecks, HeadsNotMultiple) {
  AttentionForwardArgs a = valid_args();
  a.k.shape[2] = a.v.shape[2] = 3;
  expect_error(check(a), StatusCode::kInvalidArgument, "heads_q = 8 is not a multiple of heads_kv = 3");
}

TEST(AttentionChecks, ShapeMismatches) {
  AttentionForwardArgs a = valid_args();
  a.v.shape[1] = 299;
  expect_error(check(a), StatusCode::kInvalidArgument, "v: shape (seqlen, heads)");
  a = valid_args();
  a.o.shape[2] = 4;
  expect_error(check(a), StatusCode::kInvalidArgument, "o: shape (seqlen, heads)");
  a = valid_args();
  a.k.shape[0] = 1;
  expect_error(check(a), StatusCode::kInvalidArgument, "k.shape[0] (batch)");
  a = valid_args();
  a.q.rank = 3;
  expect_error(check(a), StatusCode::kInvalidArgument, "q: rank must be 4");
}

TEST(AttentionChecks, LastDimensionNotContiguous) {
  AttentionForwardArgs a = valid_args();
  a.v.stride[3] = 2;
  expect_error(check(a), StatusCode::kInvalidArgument, "v.stride[3] = 2: the last dimension (hdim) must be contiguous");
}

TEST(AttentionChecks, PointerNotAligned) {
  AttentionForwardArgs a = valid_args();
  a.k.data = fake_ptr(0x20000008);
  expect_error(check(a), StatusCode::kInvalidArgument, "k: data pointer");
  expect_error(check(a), StatusCode::kInvalidArgument, "not 16-byte aligned");
}

TEST(AttentionChecks, StrideNotAligned) {
  AttentionForwardArgs a = valid_args();
  a.q.stride[1] = 8 * 128 + 4;  // 2056 bytes: not a multiple of 16
  a.q.stride[0] = 100 * a.q.stride[1];
  expect_error(check(a), StatusCode::kInvalidArgument, "q.stride[1] = 1028 elements (2056 bytes) is not a multiple of 16");
  a = valid_args();
  a.o.stride[2] = 132;  // 264 bytes
  a.o.stride[1] = 8 * 132, a.o.stride[0] = 100 * 8 * 132;
  expect_error(check(a), StatusCode::kInvalidArgument, "o.stride[2] = 132 elements");
}

TEST(AttentionChecks, NegativeSizesAndStrides) {
  AttentionForwardArgs a = valid_args();
  a.q.shape[1] = a.o.shape[1] = -5;
  expect_error(check(a), StatusCode::kInvalidArgument, "q.shape[1] (seqlen) is negative: -5");
  a = valid_args();
  a.k.shape[0] = -1;
  expect_error(check(a), StatusCode::kInvalidArgument, "k.shape[0] (batch) is negative");
  a = valid_args();
  a.v.stride[1] = -256;
  expect_error(check(a), StatusCode::kInvalidArgument, "v.stride[1] is negative");
}

TEST(AttentionChecks, IndexOverflow) {
  AttentionForwardArgs a = valid_args();
  a.q.shape[1] = a.o.shape[1] = int64_t(1) << 31;  // one dimension beyond int32
  expect_error(check(a), StatusCode::kInvalidArgument, "exceeds 2^31-1");
  a = valid_args();
  // Each dimension fits in 32 bits but batch * seqlen * heads does not.
  for (Tensor* t : {&a.q, &a.o}) *t = tensor_bshd(t->data, t->dtype, 4096, 65536, 16, 128);
  for (Tensor* t : {&a.k, &a.v}) *t = tensor_bshd(t->data, t->dtype, 4096, 300, 2, 128);
  a.lse = Tensor{};
  // Space the fake buffers so the aliasing check is not what fires.
  a.q.data = fake_ptr(uintptr_t(1) << 44), a.o.data = fake_ptr(uintptr_t(2) << 44);
  a.k.data = fake_ptr(uintptr_t(3) << 44), a.v.data = fake_ptr(uintptr_t(4) << 44);
  expect_error(check(a), StatusCode::kInvalidArgument, "q: batch * seqlen_q * heads_q = 4294967296 exceeds 2^31-1");
}

TEST(AttentionChecks, OutputAliasesInput) {
  AttentionForwardArgs a = valid_args();
  a.o.data = a.q.data;
  expect_error(check(a), StatusCode::kInvalidArgument, "o: overlaps input q");
  a = valid_args();
  a.o.data = fake_ptr(0x30000000 + 4096);  // starts inside v
  expect_error(check(a), StatusCode::kInvalidArgument, "o: overlaps input v");
  a = valid_args();
  a.lse.data = fake_ptr(0x20000000 + 64);  // inside k
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: overlaps input k");
  a = valid_args();
  a.lse.data = fake_ptr(0x40000000 + 256);  // inside o
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: overlaps o");
}

TEST(AttentionChecks, AdjacentBuffersDoNotAlias) {
  AttentionForwardArgs a = valid_args();
  const int64_t q_bytes = 2 * 100 * 8 * 128 * 2;
  a.o.data = fake_ptr(0x10000000 + q_bytes);  // o begins right after q ends
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

TEST(AttentionChecks, StreamOnAnotherDevice) {
  DeviceContext ctx;
  ctx.current_device = 0;
  ctx.stream_device = 1;
  expect_error(check(valid_args(), ctx), StatusCode::kInvalidArgument, "stream: belongs to device 1 but the current device is 0");
}

TEST(AttentionChecks, TensorOnHostOrAnotherDevice) {
  DeviceContext ctx;
  ctx.tensor_device[1] = kHostMemory;
  expect_error(check(valid_args(), ctx), StatusCode::kInvalidArgument, "k: points to host memory");
  ctx = DeviceContext{};
  ctx.tensor_device[4] = 3;
  expect_error(check(valid_args(), ctx), StatusCode::kInvalidArgument, "lse: lives on device 3");
}

TEST(AttentionChecks, LseShapeAndType) {
  AttentionForwardArgs a = valid_args();
  a.lse.shape[2] = 99;
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: shape (2, 8, 99) must be (batch, heads_q, seqlen_q) = (2, 8, 100)");
  a = valid_args();
  a.lse.dtype = HOPATTN_DTYPE_BF16;
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: dtype must be fp32");
}

TEST(AttentionChecks, SoftmaxScale) {
  AttentionForwardArgs a = valid_args();
  a.softmax_scale = std::numeric_limits<float>::quiet_NaN();
  expect_error(check(a), StatusCode::kInvalidArgument, "softmax_scale: must be finite");
  a = valid_args();
  a.softmax_scale = -0.125f;
  expect_error(check(a), StatusCode::kInvalidArgument, "softmax_scale: must be positive (0 selects 1/sqrt(hdim)), got -0.125");
}

TEST(AttentionChecks, ZeroLengthSequencesAreValid) {
  AttentionForwardArgs a = valid_args();
  a.k.shape[1] = a.v.shape[1] = 0;  // no keys: O = 0, LSE = -inf
  a.k.data = a.v.data = nullptr;    // an empty tensor may have no storage
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = valid_args();
  a.q.shape[1] = a.o.shape[1] = a.lse.shape[2] = 0;  // no queries: nothing to do
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = valid_args();
  for (Tensor* t : {&a.q, &a.k, &a.v, &a.o}) t->shape[0] = 0;
  a.lse.shape[0] = 0;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

// The versioned structs (hopattn.h, "Extensible argument structs"): the C++ types set
// struct_size; a raw C struct must, with the _INIT macro. These run before any device query, so
// they report on a machine without a GPU too.
TEST(AttentionChecks, StructSizeAndReserved) {
  AttentionForwardArgs a = valid_args();
  EXPECT_EQ(a.struct_size, sizeof(hopattn_attention_fwd_args_t));
  a.struct_size = 0;
  expect_error(check(a), StatusCode::kInvalidArgument, "args.struct_size: 0, expected sizeof");
  a = valid_args();
  a.reserved = 7;
  expect_error(check(a), StatusCode::kInvalidArgument, "args.reserved: must be 0, got 7");

  hopattn_attention_fwd_args_t raw{};  // struct_size 0: not made by the _INIT macro
  raw.q = valid_args().q;
  hopattn_status_t s = hopattn_attention_forward_check(&raw, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("args.struct_size: 0; set it to sizeof the struct"), std::string::npos) << s.message;
  s = hopattn_attention_forward(&raw, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;

  // One byte short of the first ABI-2 release (0.2, which ended at `causal`) is refused; 0.2's
  // size itself is accepted (OlderCallerStructSizes).
  raw = valid_args();
  raw.struct_size = uint32_t(offsetof(hopattn_attention_fwd_args_t, window) - 1);
  s = hopattn_attention_forward_check(&raw, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("is smaller than this struct ever was"), std::string::npos) << s.message;
  s = hopattn_attention_forward(&raw, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;
  EXPECT_NE(std::string(s.message).find("is smaller than this struct ever was"), std::string::npos) << s.message;
  raw.struct_size = 8;
  s = hopattn_attention_forward_check(&raw, nullptr);
  EXPECT_NE(std::string(s.message).find("is smaller than this struct ever was"), std::string::npos) << s.message;

  // A caller built against a newer header: a bigger struct whose extra bytes are zero reads as
  // this one (the argument rules then pass: any error left is about the device or, with a GPU,
  // the fake pointers' placement, never about the struct).
  struct Newer {
    hopattn_attention_fwd_args_t args;
    int64_t future_field;
  } newer{};
  newer.args = valid_args();
  newer.args.struct_size = uint32_t(sizeof(Newer));
  s = hopattn_attention_forward_check(&newer.args, nullptr);
  EXPECT_EQ(std::string(s.message).find("struct"), std::string::npos) << s.message;
  EXPECT_NE(s.code, HOPATTN_NOT_SUPPORTED) << s.message;
  newer.future_field = 1;  // a feature this library does not know is asked for
  s = hopattn_attention_forward_check(&newer.args, nullptr);
  EXPECT_EQ(s.code, HOPATTN_NOT_SUPPORTED);
  EXPECT_NE(std::string(s.message).find("a field of a newer hopattn.h"), std::string::npos) << s.message;
  newer.args.struct_size = 1u << 20;
  s = hopattn_attention_forward_check(&newer.args, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("is not a plausible struct size"), std::string::npos) << s.message;

  // (-Wextra's missing-field-initializers warns on the macro's one-field list in C++: the other
  // fields are zero, which is the point.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  hopattn_attention_fwd_args_t init = HOPATTN_ATTENTION_FWD_ARGS_INIT;
#pragma GCC diagnostic pop
  EXPECT_EQ(init.struct_size, sizeof(hopattn_attention_fwd_args_t));
  EXPECT_EQ(hopattn_abi_version(), HOPATTN_ABI_VERSION);
}

// A caller built against an older header (0.2: the struct ended at `causal`) passes a smaller
// struct_size: the library reads only that many bytes and the fields past them as zero. Here the
// bytes past struct_size hold values that would be refused (window_left -7, a NaN softcap, sinks
// of the wrong dtype): the verdict must be the one for the same call with those fields zero, the
// full-size struct's. A size in between reads the fields it covers.
// A status whose message names none of these words (an OK status, or an error about something else).
void expect_not_named(const hopattn_status_t& s, std::initializer_list<const char*> words) {
  for (const char* w : words) EXPECT_EQ(std::string(s.message).find(w), std::string::npos) << w << ": " << s.message;
}

TEST(AttentionChecks, OlderCallerStructSizes) {
  const AttentionForwardArgs base = valid_args();
  hopattn_attention_fwd_args_t zero = base;  // the 0.2 call, as this library reads it
  const hopattn_status_t want = hopattn_attention_forward_check(&zero, nullptr);
  EXPECT_EQ(std::string(want.message).find("struct"), std::string::npos) << want.message;

  hopattn_attention_fwd_args_t old = base;
  old.window = 1, old.window_left = -7, old.window_right = 0;
  old.softcap = std::numeric_limits<float>::quiet_NaN();
  old.sinks = Tensor{fake_ptr(0x60000000), HOPATTN_DTYPE_BF16, 1, {8}, {1}};
  old.struct_size = uint32_t(offsetof(hopattn_attention_fwd_args_t, window));
  hopattn_status_t s = hopattn_attention_forward_check(&old, nullptr);
  EXPECT_EQ(s.code, want.code) << s.message;
  EXPECT_STREQ(s.message, want.message);
  s = hopattn_attention_forward(&old, nullptr);  // the call reads it the same way
  expect_not_named(s, {"window", "softcap", "sinks", "struct"});

  // Up to `softcap`: the window fields are read (and window_left -7 refused), softcap and sinks not.
  old.struct_size = uint32_t(offsetof(hopattn_attention_fwd_args_t, softcap));
  s = hopattn_attention_forward_check(&old, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;
  EXPECT_NE(std::string(s.message).find("window_left"), std::string::npos) << s.message;
  old.window_left = 16;  // now valid: the NaN softcap and bf16 sinks past the size stay unread
  s = hopattn_attention_forward_check(&old, nullptr);
  expect_not_named(s, {"softcap", "sinks", "struct"});
  // Up to `sinks`: the NaN softcap is read and refused.
  old.struct_size = uint32_t(offsetof(hopattn_attention_fwd_args_t, sinks));
  s = hopattn_attention_forward_check(&old, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;
  EXPECT_NE(std::string(s.message).find("softcap"), std::string::npos) << s.message;

  // The C++ calls take this header's struct only: its size, exactly.
  AttentionForwardArgs cpp = base;
  cpp.struct_size = uint32_t(offsetof(hopattn_attention_fwd_args_t, window));
  expect_error(check(cpp), StatusCode::kInvalidArgument, "args.struct_size: ");
  expect_error(check(cpp), StatusCode::kInvalidArgument, "expected sizeof");
}

// The options of 0.3 (hopattn.h): sliding window, softcap, sinks.
Tensor valid_sinks() { return Tensor{fake_ptr(0x60000000), HOPATTN_DTYPE_FP32, 1, {8}, {1}}; }

TEST(AttentionChecks, NewFieldsZeroKeepTheOldCall) {
  AttentionForwardArgs a = valid_args();
  EXPECT_EQ(a.window, 0);
  EXPECT_EQ(a.window_left, 0);
  EXPECT_EQ(a.window_right, 0);
  EXPECT_EQ(a.softcap, 0.0f);
  EXPECT_EQ(a.sinks.data, nullptr);
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.causal = 0;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

TEST(AttentionChecks, ValidWindowsSoftcapAndSinks) {
  struct Window {
    int causal, left, right;
  };
  const Window valid[] = {{0, -1, -1}, {0, 0, 0},   {0, 17, -1}, {0, -1, 5},  {0, 3, 200},
                          {1, -1, -1}, {1, -1, 0},  {1, 128, 0}, {1, 0, -1}, {0, 1 << 30, 1 << 30}};
  for (const Window& w : valid) {
    AttentionForwardArgs a = valid_args();
    a.causal = w.causal, a.window = 1, a.window_left = w.left, a.window_right = w.right;
    const Status s = check(a);
    EXPECT_TRUE(s.ok()) << "causal " << w.causal << " window (" << w.left << ", " << w.right << "): " << s.to_string();
  }
  AttentionForwardArgs a = valid_args();
  a.softcap = 30.0f;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.softcap = 1e-3f;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = valid_args();
  a.sinks = valid_sinks();
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.sinks.data = nullptr;  // no data: no sinks, whatever the rest of the descriptor says
  a.sinks.dtype = HOPATTN_DTYPE_BF16;
  a.sinks.shape[0] = 3;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = valid_args();
  a.window = 1, a.window_left = 64, a.window_right = 0;
  a.softcap = 5.0f;
  a.sinks = valid_sinks();
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
}

TEST(AttentionChecks, WindowSides) {
  for (int bad : {-2, -7, INT32_MIN}) {
    AttentionForwardArgs a = valid_args();
    a.causal = 0, a.window = 1, a.window_left = bad, a.window_right = 4;
    expect_error(check(a), StatusCode::kInvalidArgument, "window_left");
    EXPECT_NE(check(a).message().find(std::to_string(bad)), std::string::npos) << check(a).message();
    a = valid_args();
    a.causal = 0, a.window = 1, a.window_left = 4, a.window_right = bad;
    expect_error(check(a), StatusCode::kInvalidArgument, "window_right");
    EXPECT_NE(check(a).message().find(std::to_string(bad)), std::string::npos) << check(a).message();
  }
  for (int right : {1, 128, INT32_MAX}) {
    AttentionForwardArgs a = valid_args();  // causal
    a.window = 1, a.window_left = 16, a.window_right = right;
    expect_error(check(a), StatusCode::kInvalidArgument, "window_right: must be 0 or -1 with causal");
  }
  AttentionForwardArgs a = valid_args();
  a.window = 1, a.window_left = -2, a.window_right = -2;  // the first broken rule is named
  expect_error(check(a), StatusCode::kInvalidArgument, "window_");
}

TEST(AttentionChecks, Softcap) {
  const float bad[] = {-1.0f, -1e-30f, std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (float cap : bad) {
    AttentionForwardArgs a = valid_args();
    a.softcap = cap;
    expect_error(check(a), StatusCode::kInvalidArgument, "softcap");
  }
}

TEST(AttentionChecks, Sinks) {
  AttentionForwardArgs a = valid_args();
  a.sinks = valid_sinks();
  a.sinks.dtype = HOPATTN_DTYPE_BF16;
  expect_error(check(a), StatusCode::kInvalidArgument, "sinks: dtype must be fp32");
  a = valid_args();
  a.sinks = valid_sinks();
  a.sinks.rank = 2, a.sinks.shape[1] = 1, a.sinks.stride[0] = 1, a.sinks.stride[1] = 1;  // (8, 1)
  expect_error(check(a), StatusCode::kInvalidArgument, "sinks");
  EXPECT_NE(check(a).message().find("rank"), std::string::npos) << check(a).message();
  a = valid_args();
  a.sinks = valid_sinks();
  a.sinks.shape[0] = 2;  // heads_kv, not heads_q
  expect_error(check(a), StatusCode::kInvalidArgument, "sinks: shape");
  expect_error(check(a), StatusCode::kInvalidArgument, "must be (heads_q)");
  a.sinks.shape[0] = 9;
  expect_error(check(a), StatusCode::kInvalidArgument, "sinks: shape");
  a = valid_args();
  a.sinks = valid_sinks();
  a.sinks.stride[0] = 2;  // every other float: not contiguous
  expect_error(check(a), StatusCode::kInvalidArgument, "sinks");
  EXPECT_NE(check(a).message().find("stride"), std::string::npos) << check(a).message();
  a = valid_args();
  a.sinks = valid_sinks();
  a.sinks.data = fake_ptr(0x60000002);  // not 4-byte aligned
  expect_error(check(a), StatusCode::kInvalidArgument, "sinks");
  EXPECT_NE(check(a).message().find("aligned"), std::string::npos) << check(a).message();
  a = valid_args();
  a.sinks = valid_sinks();
  a.sinks.dtype = hopattn_dtype_t(77);  // not a dtype at all: refused, not a crash
  expect_error(check(a), StatusCode::kInvalidArgument, "sinks");
  a = valid_args();  // an input: the outputs must not overlap it
  a.sinks = valid_sinks();
  a.sinks.data = fake_ptr(0x40000000 + 64);  // inside o
  expect_error(check(a), StatusCode::kInvalidArgument, "o: overlaps input sinks");
  a.sinks.data = fake_ptr(0x50000000 + 16);  // inside lse
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: overlaps input sinks");
}

// DeviceContext::tensor_device for the forward: q, k, v, o, lse, then sinks.
TEST(AttentionChecks, SinksOnHostOrAnotherDevice) {
  AttentionForwardArgs a = valid_args();
  a.sinks = valid_sinks();
  DeviceContext ctx;
  ctx.tensor_device[5] = kHostMemory;
  expect_error(check(a, ctx), StatusCode::kInvalidArgument, "sinks: points to host memory");
  ctx = DeviceContext{};
  ctx.tensor_device[5] = 2;
  expect_error(check(a, ctx), StatusCode::kInvalidArgument, "sinks: lives on device 2");
}

// Without a GPU the C ABI's check still reports argument errors (the rules come before the
// device query).
TEST(AttentionChecks, CAbiCheckReportsArgumentErrorsFirst) {
  AttentionForwardArgs a = valid_args();
  a.softmax_scale = -1.0f;
  const hopattn_status_t s = hopattn_attention_forward_check(&a, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT) << s.message;
  EXPECT_NE(std::string(s.message).find("softmax_scale: must be positive"), std::string::npos) << s.message;
}

TEST(AttentionChecks, CAbiReportsErrorsWithoutThrowing) {
  const hopattn_status_t s = hopattn_attention_forward(nullptr, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_STREQ(s.message, "args: null pointer");
}

// ---- FP8 inputs (0.5) -----------------------------------------------------------------------------

bool fp8_compiled(int hdim) {
  for (int d : attention::compiled_fp8_head_dims())
    if (d == hdim) return true;
  return false;
}

AttentionForwardArgs valid_varlen_args();  // below (0.4)

// valid_args() with e4m3 q, k, v (o bf16) and its (batch 2, heads_kv 2) descales.
AttentionForwardArgs valid_fp8_args() {
  AttentionForwardArgs a = valid_args();
  a.q.dtype = a.k.dtype = a.v.dtype = HOPATTN_DTYPE_E4M3;
  a.q_descale = tensor_descale(static_cast<float*>(fake_ptr(0x61000000)), 2, 2);
  a.k_descale = tensor_descale(static_cast<float*>(fake_ptr(0x62000000)), 2, 2);
  a.v_descale = tensor_descale(static_cast<float*>(fake_ptr(0x63000000)), 2, 2);
  return a;
}

// A build without an FP8 kernel at hdim 128 (HOPATTN_FP8_HEAD_DIMS) runs these tests as a check
// that the e4m3 call is refused as not supported, and ends them there: no skip.
#define HOPATTN_REQUIRE_FP8_HD128()                                                         \
  do {                                                                                      \
    if (!fp8_compiled(128)) {                                                               \
      expect_error(check(valid_fp8_args()), StatusCode::kNotSupported, "e4m3");             \
      return;                                                                               \
    }                                                                                       \
  } while (0)

TEST(AttentionFp8Checks, ValidCallsPass) {
  HOPATTN_REQUIRE_FP8_HD128();
  EXPECT_TRUE(check(valid_fp8_args()).ok()) << check(valid_fp8_args()).to_string();
  AttentionForwardArgs a = valid_fp8_args();
  a.q_descale = a.k_descale = a.v_descale = Tensor{};  // none: descales of 1
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = valid_fp8_args();
  a.causal = 0;
  a.lse = Tensor{};
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = valid_fp8_args();  // MQA, and descales broadcast over the batch (stride 0)
  for (Tensor* t : {&a.k, &a.v}) *t = tensor_bshd(t->data, HOPATTN_DTYPE_E4M3, 2, 300, 1, 128);
  for (Tensor* t : {&a.q_descale, &a.k_descale, &a.v_descale}) t->shape[1] = 1, t->stride[0] = 0;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  // The C ABI takes the same call.
  const hopattn_attention_fwd_args_t raw = valid_fp8_args();
  const hopattn_status_t st = hopattn_attention_forward_check(&raw, nullptr);
  EXPECT_EQ(std::string(st.message).find("descale"), std::string::npos) << st.message;
  EXPECT_EQ(std::string(st.message).find("e4m3"), std::string::npos) << st.message;
}

// The public call runs the FP8 kernel (the defaults table's e4m3 row).
TEST(AttentionFp8Checks, PublicCallRunsTheFp8Kernel) {
  HOPATTN_REQUIRE_FP8_HD128();
  std::string name;
  const Status s = experimental::forward_kernel_name(valid_fp8_args(), experimental::Overrides{}, &name);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(name, "ws_pingpong_persistent_128x128x2_e4m3");
}

TEST(AttentionFp8Checks, OutputMustBeBf16) {
  HOPATTN_REQUIRE_FP8_HD128();
  for (hopattn_dtype_t t : {HOPATTN_DTYPE_E4M3, HOPATTN_DTYPE_FP16, HOPATTN_DTYPE_FP32}) {
    AttentionForwardArgs a = valid_fp8_args();
    a.o.dtype = t;
    expect_error(check(a), StatusCode::kInvalidArgument,
                 std::string("o: dtype must be bf16 when q is e4m3, got ") + hopattn_dtype_name(t));
  }
}

TEST(AttentionFp8Checks, InputsMustAllBeE4m3) {
  HOPATTN_REQUIRE_FP8_HD128();
  AttentionForwardArgs a = valid_fp8_args();
  a.k.dtype = HOPATTN_DTYPE_BF16;
  expect_error(check(a), StatusCode::kInvalidArgument, "k: dtype bf16 does not match q's e4m3");
  a = valid_fp8_args();
  a.v.dtype = HOPATTN_DTYPE_FP16;
  expect_error(check(a), StatusCode::kInvalidArgument, "v: dtype fp16 does not match q's e4m3");
  a = valid_args();  // a 16-bit q with e4m3 k: the 16-bit rule
  a.k.dtype = HOPATTN_DTYPE_E4M3;
  expect_error(check(a), StatusCode::kInvalidArgument, "k: dtype e4m3 does not match q's bf16");
}

TEST(AttentionFp8Checks, HeadDimsWithoutAnFp8Kernel) {
  std::string dims;  // this build's, as the messages list them ("64, 128, 256")
  for (int d : attention::compiled_fp8_head_dims()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  for (int d : {64, 96, 256}) {
    if (fp8_compiled(d)) continue;
    AttentionForwardArgs a = valid_fp8_args();
    for (Tensor* t : {&a.q, &a.k, &a.v, &a.o}) *t = tensor_bshd(t->data, t->dtype, t->shape[0], t->shape[1], t->shape[2], d);
    const Status s = check(a);
    if (attention::compiled_fp8_head_dims().empty()) {
      expect_error(s, StatusCode::kNotSupported, "q: dtype e4m3 is not supported in this build");
    } else {
      expect_error(s, StatusCode::kNotSupported, "q: head dim " + std::to_string(d) + " is not supported with e4m3 inputs");
      EXPECT_NE(s.message().find("supported: " + dims), std::string::npos) << s.message();
    }
  }
  // The 16-bit message lists e4m3 with its head dims.
  AttentionForwardArgs a = valid_args();
  a.q.dtype = a.k.dtype = a.v.dtype = a.o.dtype = HOPATTN_DTYPE_INT8;
  const Status s = check(a);
  expect_error(s, StatusCode::kNotSupported, "dtype int8 is not supported");
  if (!dims.empty()) {
    EXPECT_NE(s.message().find("e4m3 (head dims " + dims + ")"), std::string::npos) << s.message();
  }
}

// What the FP8 kernels do not take yet: refused as not supported, naming the option.
TEST(AttentionFp8Checks, OptionsAreNotSupported) {
  HOPATTN_REQUIRE_FP8_HD128();
  AttentionForwardArgs a = valid_fp8_args();
  a.window = 1, a.window_left = 64, a.window_right = 0;
  expect_error(check(a), StatusCode::kNotSupported, "window: a sliding window is not supported with e4m3 inputs");
  a = valid_fp8_args();
  a.softcap = 30.0f;
  expect_error(check(a), StatusCode::kNotSupported, "softcap: a logit softcap is not supported with e4m3 inputs");
  a = valid_fp8_args();
  a.sinks = valid_sinks();
  expect_error(check(a), StatusCode::kNotSupported, "sinks: attention sinks is not supported with e4m3 inputs");
  a = valid_varlen_args();
  for (Tensor* t : {&a.q, &a.k, &a.v}) t->dtype = HOPATTN_DTYPE_E4M3;
  expect_error(check(a), StatusCode::kNotSupported,
               "cu_seqlens_q: a variable-length batch is not supported with e4m3 inputs");
}

TEST(AttentionFp8Checks, AllThreeDescalesOrNone) {
  HOPATTN_REQUIRE_FP8_HD128();
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int missing = 0; missing < 3; ++missing) {
    AttentionForwardArgs a = valid_fp8_args();
    Tensor* ts[3] = {&a.q_descale, &a.k_descale, &a.v_descale};
    *ts[missing] = Tensor{};
    expect_error(check(a), StatusCode::kInvalidArgument,
                 std::string(names[missing]) + ": null while " + names[missing == 0 ? 1 : 0] +
                     " is set (give all three descales or none)");
  }
  AttentionForwardArgs a = valid_fp8_args();
  a.q_descale = a.k_descale = Tensor{};  // only v_descale
  expect_error(check(a), StatusCode::kInvalidArgument, "q_descale: null while v_descale is set");
}

TEST(AttentionFp8Checks, DescaleShapeTypeAndAlignment) {
  HOPATTN_REQUIRE_FP8_HD128();
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    auto with = [&](auto&& change) {
      AttentionForwardArgs a = valid_fp8_args();
      Tensor* ts[3] = {&a.q_descale, &a.k_descale, &a.v_descale};
      change(*ts[i]);
      return check(a);
    };
    expect_error(with([](Tensor& t) { t.shape[1] = 8; }), StatusCode::kInvalidArgument,
                 n + ": shape (2, 8) must be (batch, heads_kv) = (2, 2)");  // per q-head: not this convention
    expect_error(with([](Tensor& t) { t.shape[0] = 1; }), StatusCode::kInvalidArgument,
                 n + ": shape (1, 2) must be (batch, heads_kv) = (2, 2)");
    expect_error(with([](Tensor& t) { t.dtype = HOPATTN_DTYPE_BF16; }), StatusCode::kInvalidArgument,
                 n + ": dtype must be fp32, got bf16");
    expect_error(with([](Tensor& t) { t.rank = 1; }), StatusCode::kInvalidArgument, n + ": rank must be 2, got 1");
    expect_error(with([](Tensor& t) { t.stride[1] = -1; }), StatusCode::kInvalidArgument,
                 n + ".stride[1] is negative");
    expect_error(with([](Tensor& t) { t.data = static_cast<char*>(t.data) + 2; }), StatusCode::kInvalidArgument,
                 n + ": data pointer is not 4-byte aligned");
  }
}

// Descales belong to e4m3 inputs: set on a 16-bit call they would be ignored, so they are refused.
TEST(AttentionFp8Checks, DescalesWithSixteenBitInputs) {
  AttentionForwardArgs a = valid_args();
  a.v_descale = tensor_descale(static_cast<float*>(fake_ptr(0x63000000)), 2, 2);
  expect_error(check(a), StatusCode::kInvalidArgument, "v_descale: set, but q is bf16 (descales apply to e4m3 inputs only)");
}

TEST(AttentionFp8Checks, OutputsMustNotAliasTheDescales) {
  HOPATTN_REQUIRE_FP8_HD128();
  AttentionForwardArgs a = valid_fp8_args();
  a.k_descale.data = static_cast<char*>(a.o.data) + 64;
  expect_error(check(a), StatusCode::kInvalidArgument, "o: overlaps input k_descale in memory");
  a = valid_fp8_args();
  a.v_descale.data = a.lse.data;
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: overlaps input v_descale in memory");
}

TEST(AttentionFp8Checks, DescalesOnHostOrAnotherDevice) {
  HOPATTN_REQUIRE_FP8_HD128();
  DeviceContext ctx;
  ctx.tensor_device[10] = kHostMemory;  // the order of query_attention_context: ..., workspace, q_descale, k_descale, v_descale
  expect_error(check(valid_fp8_args(), ctx), StatusCode::kInvalidArgument, "q_descale: points to host memory");
  ctx = DeviceContext{};
  ctx.tensor_device[12] = 5;
  expect_error(check(valid_fp8_args(), ctx), StatusCode::kInvalidArgument, "v_descale: lives on device 5");
}

// A caller built against 0.4 passes the struct up to workspace_bytes: the descales past it read
// as zero (here they hold a descale a 16-bit call would refuse).
TEST(AttentionFp8Checks, OlderCallerStructSizeReadsNoDescale) {
  hopattn_attention_fwd_args_t old = valid_args();
  old.q_descale = tensor_descale(static_cast<float*>(fake_ptr(0x61000000)), 2, 2);
  old.struct_size = uint32_t(offsetof(hopattn_attention_fwd_args_t, q_descale));
  hopattn_status_t s = hopattn_attention_forward_check(&old, nullptr);
  EXPECT_EQ(std::string(s.message).find("descale"), std::string::npos) << s.message;
  EXPECT_EQ(std::string(s.message).find("struct"), std::string::npos) << s.message;
  old.struct_size = uint32_t(sizeof(hopattn_attention_fwd_args_t));  // this header's size: read and refused
  s = hopattn_attention_forward_check(&old, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("q_descale: set, but q is bf16"), std::string::npos) << s.message;
  // The fields keep their place: appended after workspace_bytes (0.4's last field).
  EXPECT_EQ(offsetof(hopattn_attention_fwd_args_t, q_descale),
            offsetof(hopattn_attention_fwd_args_t, workspace_bytes) + sizeof(size_t));
  EXPECT_EQ(sizeof(hopattn_attention_fwd_args_t), offsetof(hopattn_attention_fwd_args_t, q_descale) + 3 * sizeof(hopattn_tensor_t));
}

TEST(AttentionFp8Checks, DescaleHelper) {
  const Tensor t = tensor_descale(static_cast<float*>(fake_ptr(0x1000)), 3, 5);
  EXPECT_EQ(t.dtype, HOPATTN_DTYPE_FP32);
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.shape[0], 3);
  EXPECT_EQ(t.shape[1], 5);
  EXPECT_EQ(t.stride[0], 5);
  EXPECT_EQ(t.stride[1], 1);
}

// ---- FP8 quantization (0.5) -----------------------------------------------------------------------

// GQA q (2, 100, 8, 128) bf16 into e4m3 with (2, 2) descales.
Fp8QuantizeArgs valid_quantize_args() {
  Fp8QuantizeArgs a;
  a.x = tensor_bshd(fake_ptr(0x10000000), HOPATTN_DTYPE_BF16, 2, 100, 8, 128);
  a.out = tensor_bshd(fake_ptr(0x20000000), HOPATTN_DTYPE_E4M3, 2, 100, 8, 128);
  a.descale = tensor_descale(static_cast<float*>(fake_ptr(0x30000000)), 2, 2);
  return a;
}

// A caller built against 0.5's first form of the struct (no `hadamard`) is read with hadamard = 0:
// whatever lies past its struct_size is not read, and it is not refused for its size.
TEST(Fp8QuantizeChecks, AStructWithoutHadamardReadsZero) {
  hopattn_fp8_quantize_args_t full = valid_quantize_args();
  full.hadamard = 2;
  const hopattn_status_t bad = hopattn_fp8_quantize(&full, nullptr);
  EXPECT_EQ(bad.code, HOPATTN_INVALID_ARGUMENT) << bad.message;
  EXPECT_NE(std::string(bad.message).find("hadamard: must be 0 or 1"), std::string::npos) << bad.message;
  hopattn_fp8_quantize_args_t old = full;  // hadamard 2 past the caller's size: never read
  old.struct_size = uint32_t(offsetof(hopattn_fp8_quantize_args_t, hadamard));
  const hopattn_status_t s = hopattn_fp8_quantize(&old, nullptr);
  EXPECT_EQ(std::string(s.message).find("hadamard"), std::string::npos) << s.message;
  EXPECT_EQ(std::string(s.message).find("struct_size"), std::string::npos) << s.message;
}

TEST(Fp8QuantizeChecks, Rules) {
  EXPECT_TRUE(check_fp8_quantize(valid_quantize_args(), {}).ok()) << check_fp8_quantize(valid_quantize_args(), {}).to_string();
  Fp8QuantizeArgs a = valid_quantize_args();
  a.x.dtype = HOPATTN_DTYPE_FP16;
  EXPECT_TRUE(check_fp8_quantize(a, {}).ok());
  a.descale = tensor_descale(static_cast<float*>(fake_ptr(0x30000000)), 2, 8);  // k or v: one descale per head
  EXPECT_TRUE(check_fp8_quantize(a, {}).ok()) << check_fp8_quantize(a, {}).to_string();
  auto expect = [](const Fp8QuantizeArgs& args, StatusCode code, const std::string& needle) {
    expect_error(check_fp8_quantize(args, {}), code, needle);
  };
  a = valid_quantize_args();
  a.x.dtype = HOPATTN_DTYPE_FP32;
  expect(a, StatusCode::kNotSupported, "x: dtype fp32 is not supported; supported: bf16, fp16");
  a = valid_quantize_args();
  a.out.dtype = HOPATTN_DTYPE_BF16;
  expect(a, StatusCode::kInvalidArgument, "out: dtype must be e4m3, got bf16");
  a = valid_quantize_args();
  a.descale.dtype = HOPATTN_DTYPE_BF16;
  expect(a, StatusCode::kInvalidArgument, "descale: dtype must be fp32, got bf16");
  a = valid_quantize_args();
  a.out.shape[1] = 99;
  expect(a, StatusCode::kInvalidArgument, "out.shape[1] (seqlen) = 99 differs from x's 100");
  a = valid_quantize_args();
  a.descale.shape[0] = 1;
  expect(a, StatusCode::kInvalidArgument, "descale.shape[0] (batch) = 1 differs from x's batch 2");
  a = valid_quantize_args();
  a.descale.shape[1] = 3;
  expect(a, StatusCode::kInvalidArgument, "descale.shape[1] (heads_kv) = 3 does not divide x's heads = 8");
  a = valid_quantize_args();
  a.x.stride[3] = 2;
  expect(a, StatusCode::kInvalidArgument, "x.stride[3] = 2: the last dimension (hdim) must be contiguous");
  a = valid_quantize_args();
  a.x.data = fake_ptr(0x10000001);
  expect(a, StatusCode::kInvalidArgument, "x: data pointer");
  a = valid_quantize_args();
  a.descale.data = fake_ptr(0x30000002);
  expect(a, StatusCode::kInvalidArgument, "descale: data pointer");
  a = valid_quantize_args();
  a.out.data = fake_ptr(0x10000000 + 4096);
  expect(a, StatusCode::kInvalidArgument, "out: overlaps x in memory");
  a = valid_quantize_args();
  a.descale.data = fake_ptr(0x20000000 + 64);
  expect(a, StatusCode::kInvalidArgument, "out: overlaps descale in memory");
  a = valid_quantize_args();
  a.descale.stride[0] = 0;  // an output: every batch would write the same descale
  expect(a, StatusCode::kInvalidArgument, "descale.stride[0] = 0 makes elements overlap");
  a = valid_quantize_args();
  a.x.rank = 3;
  expect(a, StatusCode::kInvalidArgument, "x: rank must be 4");
  a = valid_quantize_args();
  a.hadamard = 1;  // hdim 128: taken
  EXPECT_TRUE(check_fp8_quantize(a, {}).ok()) << check_fp8_quantize(a, {}).to_string();
  a.hadamard = 2;
  expect(a, StatusCode::kInvalidArgument, "hadamard: must be 0 or 1, got 2");
  a = valid_quantize_args();
  a.hadamard = 1;
  a.x.shape[3] = a.out.shape[3] = 96;
  a.x.stride[2] = a.out.stride[2] = 96, a.x.stride[1] = a.out.stride[1] = 8 * 96, a.x.stride[0] = a.out.stride[0] = 100 * 8 * 96;
  expect(a, StatusCode::kNotSupported, "hadamard: hdim 96 is not a power of two from 32 to 256");
  a.x.shape[3] = a.out.shape[3] = 512;
  a.x.stride[2] = a.out.stride[2] = 512, a.x.stride[1] = a.out.stride[1] = 8 * 512, a.x.stride[0] = a.out.stride[0] = 100 * 8 * 512;
  expect(a, StatusCode::kNotSupported, "hadamard: hdim 512 is not a power of two from 32 to 256");
  DeviceContext ctx;
  ctx.tensor_device[2] = kHostMemory;
  expect_error(check_fp8_quantize(valid_quantize_args(), ctx), StatusCode::kInvalidArgument,
               "descale: points to host memory");
  // The C entry: the struct's rules, then these; no exception escapes.
  hopattn_fp8_quantize_args_t raw{};
  hopattn_status_t s = hopattn_fp8_quantize(&raw, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("args.struct_size: 0"), std::string::npos) << s.message;
  raw = valid_quantize_args();
  raw.out.dtype = HOPATTN_DTYPE_INT8;
  s = hopattn_fp8_quantize(&raw, nullptr);
  EXPECT_EQ(s.code, HOPATTN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("out: dtype must be e4m3, got int8"), std::string::npos) << s.message;
  s = hopattn_fp8_quantize(nullptr, nullptr);
  EXPECT_STREQ(s.message, "args: null pointer");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  hopattn_fp8_quantize_args_t init = HOPATTN_FP8_QUANTIZE_ARGS_INIT;
#pragma GCC diagnostic pop
  EXPECT_EQ(init.struct_size, sizeof(hopattn_fp8_quantize_args_t));
}

// ---- Variable-length batches (0.4) ----------------------------------------------------------------

// A valid varlen GQA call: 5 sequences packed into q/o (1000, 8, 128), k/v (3000, 2, 128), bf16,
// LSE (8, 1000), cu_seqlens (6), seqused_k (5), a workspace of exactly the size asked for.
AttentionForwardArgs valid_varlen_args() {
  AttentionForwardArgs a{};
  a.q = tensor_thd(fake_ptr(0x10000000), HOPATTN_DTYPE_BF16, 1000, 8, 128);
  a.k = tensor_thd(fake_ptr(0x20000000), HOPATTN_DTYPE_BF16, 3000, 2, 128);
  a.v = tensor_thd(fake_ptr(0x30000000), HOPATTN_DTYPE_BF16, 3000, 2, 128);
  a.o = tensor_thd(fake_ptr(0x40000000), HOPATTN_DTYPE_BF16, 1000, 8, 128);
  a.lse = tensor_lse_varlen(static_cast<float*>(fake_ptr(0x50000000)), 8, 1000);
  a.cu_seqlens_q = tensor_cu_seqlens(static_cast<int32_t*>(fake_ptr(0x60000000)), 5);
  a.cu_seqlens_k = tensor_cu_seqlens(static_cast<int32_t*>(fake_ptr(0x60001000)), 5);
  a.seqused_k = tensor_cu_seqlens(static_cast<int32_t*>(fake_ptr(0x60002000)), 5);
  a.seqused_k.shape[0] = 5;
  a.max_seqlen_q = 600;
  a.max_seqlen_k = 2000;
  a.causal = 1;
  size_t bytes = 0;
  const Status s = attention_forward_workspace_size(a, &bytes);
  EXPECT_TRUE(s.ok()) << s.to_string();
  a.workspace = fake_ptr(0x70000000);
  a.workspace_bytes = bytes;
  return a;
}

TEST(AttentionVarlenChecks, ValidCallsPass) {
  AttentionForwardArgs a = valid_varlen_args();
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a.lse = Tensor{};  // optional
  a.seqused_k = Tensor{};  // optional
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  a = valid_varlen_args();
  a.window = 1, a.window_left = 128, a.window_right = 0, a.softcap = 30.0f;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  // A larger workspace than needed is fine; so is a padded call that passes a workspace (unused).
  a = valid_varlen_args();
  a.workspace_bytes += 4096;
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  AttentionForwardArgs p = valid_args();
  p.workspace = fake_ptr(0x70000000), p.workspace_bytes = 64;
  EXPECT_TRUE(check(p).ok()) << check(p).to_string();
}

// The size depends on total_q, batch and heads_q only (fwd_varlen.hpp), 0 for padded and empty calls.
TEST(AttentionVarlenChecks, WorkspaceSize) {
  AttentionForwardArgs a = valid_varlen_args();
  size_t bytes = 0;
  ASSERT_TRUE(attention_forward_workspace_size(a, &bytes).ok());
  // 64-byte header, 36 bytes of scratch per sequence rounded to 32, then (1000/64 + 5) * 8 tiles of 32 bytes.
  EXPECT_EQ(bytes, size_t((64 + 5 * 36 + 31) / 32 * 32 + (1000 / 64 + 5) * 8 * 32));
  a.max_seqlen_k = 5;  // lengths do not move it
  a.k.shape[0] = a.v.shape[0] = 10;
  size_t same = 0;
  ASSERT_TRUE(attention_forward_workspace_size(a, &same).ok());
  EXPECT_EQ(same, bytes);
  a.workspace = nullptr, a.workspace_bytes = 0;  // not needed to ask for it
  ASSERT_TRUE(attention_forward_workspace_size(a, &same).ok());
  AttentionForwardArgs p = valid_args();
  ASSERT_TRUE(attention_forward_workspace_size(p, &bytes).ok());
  EXPECT_EQ(bytes, 0u);
  a = valid_varlen_args();
  a.q.shape[0] = a.o.shape[0] = a.lse.shape[1] = 0;
  ASSERT_TRUE(attention_forward_workspace_size(a, &bytes).ok());
  EXPECT_EQ(bytes, 0u);
  // The size asks the shapes' rules first; a null out-pointer is refused.
  a = valid_varlen_args();
  a.q.rank = 4;
  expect_error(attention_forward_workspace_size(a, &bytes), StatusCode::kInvalidArgument, "q: rank");
  expect_error(attention_forward_workspace_size(valid_varlen_args(), nullptr), StatusCode::kInvalidArgument, "bytes: null");
  hopattn_attention_fwd_args_t c = valid_varlen_args();
  size_t cb = 0;
  EXPECT_EQ(hopattn_attention_forward_workspace_size(&c, &cb).code, HOPATTN_OK);
  EXPECT_EQ(cb, c.workspace_bytes);
}

TEST(AttentionVarlenChecks, PackedShapes) {
  AttentionForwardArgs a = valid_varlen_args();
  a.q = tensor_bshd(a.q.data, HOPATTN_DTYPE_BF16, 1, 1000, 8, 128);  // a padded q with cu_seqlens
  expect_error(check(a), StatusCode::kInvalidArgument, "q: rank");
  a = valid_varlen_args();
  a.o.shape[0] = 999;
  expect_error(check(a), StatusCode::kInvalidArgument, "o: shape (total, heads) = (999, 8) differs from q's (1000, 8)");
  a = valid_varlen_args();
  a.v.shape[0] = 2999;
  expect_error(check(a), StatusCode::kInvalidArgument, "v: shape (total, heads)");
  a = valid_varlen_args();
  a.k.shape[1] = a.v.shape[1] = 3;
  expect_error(check(a), StatusCode::kInvalidArgument, "q: heads_q = 8 is not a multiple of heads_kv = 3 (k.shape[1])");
  a = valid_varlen_args();
  a.k.shape[2] = a.v.shape[2] = 64;
  expect_error(check(a), StatusCode::kInvalidArgument, "k.shape[2] (hdim) = 64 differs");
  a = valid_varlen_args();
  a.q.shape[2] = a.k.shape[2] = a.v.shape[2] = a.o.shape[2] = 96;
  expect_error(check(a), StatusCode::kNotSupported, "q: head dim 96 is not supported");
  a = valid_varlen_args();
  a.v.stride[2] = 2;
  expect_error(check(a), StatusCode::kInvalidArgument, "v.stride[2] = 2: the last dimension (hdim) must be contiguous");
  a = valid_varlen_args();
  for (Tensor* t : {&a.q, &a.o}) t->shape[0] = INT32_MAX - 1, t->stride[0] = 8 * 128;
  a.lse = Tensor{};
  expect_error(check(a), StatusCode::kInvalidArgument, "q: total_q * heads_q = ");
}

TEST(AttentionVarlenChecks, LseIsHeadsByTotal) {
  AttentionForwardArgs a = valid_varlen_args();
  a.lse = tensor_lse(static_cast<float*>(a.lse.data), 1, 8, 1000);  // the padded layout
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: rank");
  a = valid_varlen_args();
  a.lse.shape[0] = 1000, a.lse.shape[1] = 8, a.lse.stride[0] = 8;  // transposed
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: shape (1000, 8) must be (heads_q, total_q) = (8, 1000)");
  a = valid_varlen_args();
  a.lse.dtype = HOPATTN_DTYPE_BF16;
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: dtype must be fp32");
  a = valid_varlen_args();
  a.lse.stride[0] = 10;  // heads overlap
  expect_error(check(a), StatusCode::kInvalidArgument, "makes elements overlap");
}

TEST(AttentionVarlenChecks, SeqlensTensors) {
  AttentionForwardArgs a = valid_varlen_args();
  a.cu_seqlens_k = Tensor{};
  expect_error(check(a), StatusCode::kInvalidArgument, "cu_seqlens_k: null; a variable-length batch needs both");
  a = valid_varlen_args();
  a.cu_seqlens_q.dtype = HOPATTN_DTYPE_FP32;
  expect_error(check(a), StatusCode::kInvalidArgument, "cu_seqlens_q: dtype must be int32, got fp32");
  a = valid_varlen_args();
  a.cu_seqlens_k.shape[0] = 5;
  expect_error(check(a), StatusCode::kInvalidArgument, "cu_seqlens_k: shape (5) must be (batch + 1) = (6)");
  a = valid_varlen_args();
  a.seqused_k.shape[0] = 6;
  expect_error(check(a), StatusCode::kInvalidArgument, "seqused_k: shape (6) must be (batch) = (5)");
  a = valid_varlen_args();
  a.cu_seqlens_q.stride[0] = 2;
  expect_error(check(a), StatusCode::kInvalidArgument, "cu_seqlens_q.stride[0] = 2: must be contiguous");
  a = valid_varlen_args();
  a.cu_seqlens_k.data = fake_ptr(0x60001002);
  expect_error(check(a), StatusCode::kInvalidArgument, "cu_seqlens_k: data pointer is not 4-byte aligned");
  a = valid_varlen_args();
  a.seqused_k.rank = 2;
  expect_error(check(a), StatusCode::kInvalidArgument, "seqused_k: rank");
  a = valid_varlen_args();
  a.cu_seqlens_q.shape[0] = 0;
  expect_error(check(a), StatusCode::kInvalidArgument, "cu_seqlens_q: shape (0) must be (batch + 1)");
}

TEST(AttentionVarlenChecks, MaxSeqlens) {
  AttentionForwardArgs a = valid_varlen_args();
  a.max_seqlen_q = 0;
  expect_error(check(a), StatusCode::kInvalidArgument, "max_seqlen_q: must be >= 1");
  a = valid_varlen_args();
  a.max_seqlen_k = -3;
  expect_error(check(a), StatusCode::kInvalidArgument, "max_seqlen_k: must be >= 1");
  a = valid_varlen_args();
  a.max_seqlen_q = 1 << 29, a.max_seqlen_k = 1 << 29;
  expect_error(check(a), StatusCode::kNotSupported, "max_seqlen_q + max_seqlen_k = 1073741824 must be below 2^30");
  // An empty batch (no sequence, no query row or no head) is a no-op: no length or workspace needed.
  for (int which = 0; which < 2; ++which) {
    a = valid_varlen_args();
    if (which == 0) {
      a.cu_seqlens_q.shape[0] = a.cu_seqlens_k.shape[0] = 1;
      a.seqused_k.shape[0] = 0;
    } else {
      a.q.shape[0] = a.o.shape[0] = a.lse.shape[1] = 0;
    }
    a.max_seqlen_q = a.max_seqlen_k = 0;
    a.workspace = nullptr, a.workspace_bytes = 0;
    EXPECT_TRUE(check(a).ok()) << which << ": " << check(a).to_string();
  }
}

TEST(AttentionVarlenChecks, Workspace) {
  AttentionForwardArgs a = valid_varlen_args();
  a.workspace = nullptr;
  expect_error(check(a), StatusCode::kInvalidArgument, "workspace: null; a variable-length batch needs ");
  a = valid_varlen_args();
  a.workspace_bytes -= 1;
  expect_error(check(a), StatusCode::kInvalidArgument, "workspace_bytes: ");
  a = valid_varlen_args();
  a.workspace = fake_ptr(0x70000008);
  expect_error(check(a), StatusCode::kInvalidArgument, "workspace: data pointer is not 16-byte aligned");
  a = valid_varlen_args();
  a.workspace = fake_ptr(0x40000000 + 4096);  // inside o
  expect_error(check(a), StatusCode::kInvalidArgument, "workspace: overlaps o in memory");
  a = valid_varlen_args();
  a.workspace = fake_ptr(0x60001000 - 64);  // runs into cu_seqlens_k
  expect_error(check(a), StatusCode::kInvalidArgument, "workspace: overlaps cu_seqlens_k in memory");
}

TEST(AttentionVarlenChecks, OutputsMustNotAliasTheLengths) {
  AttentionForwardArgs a = valid_varlen_args();
  a.cu_seqlens_q.data = static_cast<char*>(a.o.data) + 256;
  expect_error(check(a), StatusCode::kInvalidArgument, "o: overlaps input cu_seqlens_q in memory");
  a = valid_varlen_args();
  a.seqused_k.data = static_cast<char*>(a.lse.data) + 64;
  expect_error(check(a), StatusCode::kInvalidArgument, "lse: overlaps input seqused_k in memory");
}

// A padded call refuses the variable-length fields that would otherwise be ignored.
TEST(AttentionVarlenChecks, PaddedCallRefusesVarlenFields) {
  AttentionForwardArgs a = valid_args();
  a.cu_seqlens_k = tensor_cu_seqlens(static_cast<int32_t*>(fake_ptr(0x60001000)), 2);
  expect_error(check(a), StatusCode::kInvalidArgument, "cu_seqlens_k: is set only with cu_seqlens_q");
  a = valid_args();
  a.seqused_k = tensor_cu_seqlens(static_cast<int32_t*>(fake_ptr(0x60001000)), 2);
  expect_error(check(a), StatusCode::kInvalidArgument, "seqused_k: is set only with cu_seqlens_q");
  a = valid_args();
  a.max_seqlen_q = 100;
  expect_error(check(a), StatusCode::kInvalidArgument, "max_seqlen_q: 100 is set only with cu_seqlens_q");
  a = valid_args();
  a.max_seqlen_k = 300;
  expect_error(check(a), StatusCode::kInvalidArgument, "max_seqlen_k: 300 is set only with cu_seqlens_q");
}

// DeviceContext::tensor_device for the forward: q, k, v, o, lse, sinks, cu_seqlens_q, cu_seqlens_k,
// seqused_k, workspace.
TEST(AttentionVarlenChecks, LengthsAndWorkspaceOnHostOrAnotherDevice) {
  const char* names[4] = {"cu_seqlens_q", "cu_seqlens_k", "seqused_k", "workspace"};
  for (int i = 0; i < 4; ++i) {
    DeviceContext ctx;
    ctx.tensor_device[6 + i] = kHostMemory;
    expect_error(check(valid_varlen_args(), ctx), StatusCode::kInvalidArgument, std::string(names[i]) + ": points to host memory");
    ctx = DeviceContext{};
    ctx.tensor_device[6 + i] = 3;
    expect_error(check(valid_varlen_args(), ctx), StatusCode::kInvalidArgument, std::string(names[i]) + ": lives on device 3");
  }
}

// Head dim 256 takes variable-length batches (refused until 2026-12-06's fix of its Q halves): the
// arguments pass and the workspace has a size.
TEST(AttentionVarlenChecks, HeadDim256IsAccepted) {
  AttentionForwardArgs a = valid_varlen_args();
  for (Tensor* t : {&a.q, &a.k, &a.v, &a.o}) t->shape[2] = 256, t->stride[1] = 256, t->stride[0] *= 2;
  a.workspace_bytes = size_t(1) << 20;
  const std::vector<int>& dims = attention::compiled_head_dims();
  if (std::find(dims.begin(), dims.end(), 256) == dims.end()) {  // a build without hdim 256 refuses it
    expect_error(check(a), StatusCode::kNotSupported, "head dim 256 is not supported");
    return;
  }
  EXPECT_TRUE(check(a).ok()) << check(a).to_string();
  size_t bytes = 0;
  EXPECT_TRUE(attention_forward_workspace_size(a, &bytes).ok());
  EXPECT_GT(bytes, size_t(0));
}

TEST(AttentionVarlenChecks, CHelpers) {
  const hopattn_tensor_t t = hopattn_tensor_thd(fake_ptr(0x1000), HOPATTN_DTYPE_FP16, 17, 4, 64);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.shape[0], 17);
  EXPECT_EQ(t.stride[0], 4 * 64);
  EXPECT_EQ(t.stride[1], 64);
  EXPECT_EQ(t.stride[2], 1);
  const Tensor l = tensor_lse_varlen(nullptr, 4, 17);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.stride[0], 17);
  const Tensor c = tensor_cu_seqlens(nullptr, 3);
  EXPECT_EQ(c.shape[0], 4);
  EXPECT_EQ(c.dtype, HOPATTN_DTYPE_INT32);
}

}  // namespace
}  // namespace hopattn
