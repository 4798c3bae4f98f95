#include "attn_rounds.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "attention/experimental.hpp"
#include "device_utils.hpp"
#include "common/cuda_check.hpp"
#include "gpu_state.hpp"
#include "timing.hpp"

namespace hopattn::bench {
namespace {

// Times one call; a first call that fails returns false with its reason.
bool time_attention(const TimedCall& call, Stream stream, double target_ms, double* ms, std::string* why) {
  const Status first = call.fn(call.args, stream);
  if (!first.ok()) {
    *why = first.to_string();
    return false;
  }
  HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  const Timing t = time_launches(
      [&] {
        const Status s = call.fn(call.args, stream);
        if (!s.ok()) throw std::runtime_error(call.name + ": " + s.to_string());
      },
      stream, target_ms);
  *ms = t.median_ms;
  return true;
}

}  // namespace

const std::vector<std::string>& forward_override_keys() {
  static const std::vector<std::string> keys = {"stale_max_log2", "narrow_pv",        "skip_unseen",
                                                "causal_group",   "persistent_group", "varlen_pdl",
                                                "varlen_dynamic", "combine_pdl"};
  return keys;
}

namespace {
void apply_override(experimental::Overrides& o, const std::string& key, double v) {
  if (key == "stale_max_log2") o.fwd_stale_max_log2 = float(v);
  else if (key == "narrow_pv") o.fwd_narrow_pv = v != 0;
  else if (key == "skip_unseen") o.fwd_skip_unseen = v != 0;
  else if (key == "causal_group") o.fwd_causal_group = int(v);
  else if (key == "persistent_group") o.fwd_persistent_group = int(v);
  else if (key == "varlen_pdl") o.fwd_varlen_pdl = v != 0;
  else if (key == "varlen_dynamic") o.fwd_varlen_dynamic = v != 0;
  else if (key == "combine_pdl") o.decode_combine_pdl = v != 0;
  else throw std::invalid_argument("override '" + key + "' is not one of the forward experiments");
}
}  // namespace

ForwardFn hopattn_forward_fn(const std::string& kernel, const std::vector<std::pair<std::string, double>>& overrides) {
  experimental::Overrides o;
  for (const auto& [key, v] : overrides) apply_override(o, key, v);
  // NAME+KEY=VALUE+...: the row's own experiments after the global ones.
  size_t plus = kernel.find('+');
  o.fwd_kernel = kernel.substr(0, plus);
  if (o.fwd_kernel == "default") o.fwd_kernel.clear();
  while (plus != std::string::npos) {
    const size_t next = kernel.find('+', plus + 1);
    const std::string kv = kernel.substr(plus + 1, next == std::string::npos ? std::string::npos : next - plus - 1);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("--kernels: '" + kv + "' in '" + kernel + "' is not KEY=VALUE");
    char* end = nullptr;
    const double v = std::strtod(kv.c_str() + eq + 1, &end);
    if (end == kv.c_str() + eq + 1 || *end != '\0')
      throw std::invalid_argument("--kernels: '" + kv + "' in '" + kernel + "' has no number after '='");
    apply_override(o, kv.substr(0, eq), v);
    plus = next;
  }
  return [o](const AttentionForwardArgs& a, Stream s) { return experimental::attention_forward(a, s, o); };
}

std::vector<RoundsTiming> time_in_rounds(const std::vector<TimedCall>& calls, size_t rotation, const BenchOptions& opt,
                                         Stream stream, int device, std::map<std::string, std::string>* skipped) {
  // The order of measurement rotates by one call per cell, so that none is always timed late in
  // a long back-to-back cell (r34: persistent kernels measured 5-9 % slower as the sixth of seven
  // rows than as the first); rows are reported in the listed order. With --rounds R the whole
  // rotation runs R times, starting one call later each round; a row's time is the median of
  // its rounds.
  const size_t n = calls.size();
  std::vector<RoundsTiming> out(n);
  if (n == 0) return out;
  std::vector<std::vector<double>> round_ms(n);
  std::vector<std::vector<GpuState>> round_state(n);  // sampled right after each timing
  auto first_of = [&](int round) { return (rotation + size_t(round)) % n; };
  if (opt.warmup_ms > 0) {
    // Untimed: the call timed first; a failing call is left to the timing below.
    const TimedCall& warm = calls[first_of(0)];
    if (warm.fn(warm.args, stream).ok()) {
      HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
      time_launches([&] { (void)warm.fn(warm.args, stream); }, stream, opt.warmup_ms / 2, 2);
    }
  }
  std::vector<bool> failed(n, false);
  for (int round = 0; round < opt.rounds; ++round) {
    const size_t first = first_of(round);
    for (size_t j = 0; j < n; ++j) {
      const size_t k = (first + j) % n;
      if (failed[k]) continue;  // failed before (reason recorded); its earlier rounds still count
      double ms = 0;
      std::string reason;
      if (!time_attention(calls[k], stream, opt.target_group_ms, &ms, &reason)) {
        skipped->emplace(calls[k].name, reason);
        if (round_ms[k].empty()) out[k].reason = reason;
        failed[k] = true;
        continue;
      }
      round_ms[k].push_back(ms);
      round_state[k].push_back(sample_gpu_state(device));
    }
  }
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> v = round_ms[k];
    if (v.empty()) continue;  // failed in round 0
    std::sort(v.begin(), v.end());
    const size_t m = v.size();
    RoundsTiming& t = out[k];
    t.timed = true;
    t.ms = m % 2 == 1 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
    if (m > 1) {
      char note[96];
      std::snprintf(note, sizeof(note), "median of %zu rounds, %.4f-%.4f ms", m, v.front(), v.back());
      t.rounds_note = note;
    }
    t.gpu_state = describe_gpu_states(round_state[k].data(), int(round_state[k].size()));
  }
  return out;
}

void fill_attention_inputs(void* q, void* k, void* v, int64_t elems, void* sinks, int sink_heads, const BenchOptions& opt,
                           Stream stream) {
  void* const qkv[3] = {q, k, v};
  for (int i = 0; i < 3; ++i) reference::fill_normal(qkv[i], opt.dtype, elems, uint64_t(i + 1), 1.0f, stream);
  if (sinks != nullptr) reference::fill_normal(sinks, HOPATTN_DTYPE_FP32, sink_heads, 4, 1.0f, stream);
  if (opt.bf16_values && opt.dtype == HOPATTN_DTYPE_FP16) {
    HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int i = 0; i < 3; ++i) {
      reference::fill_normal(qkv[i], HOPATTN_DTYPE_BF16, elems, uint64_t(i + 1), 1.0f, stream);
      HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::vector<float> host = reference::download_as_float(qkv[i], HOPATTN_DTYPE_BF16, elems);
      reference::upload_from_float(qkv[i], HOPATTN_DTYPE_FP16, host.data(), elems);
    }
    std::printf("inputs: fp16 holding bf16-rounded normal values (--bf16-values)\n");
  }
  HOPATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace hopattn::bench
