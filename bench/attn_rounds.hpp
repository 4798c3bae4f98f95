// The attention sections' timing (bench.cpp's grid, varlen.cpp's packed batches): the calls of one
// cell timed in rounds whose order rotates, after an untimed warm-up, each call's figure the
// median of its rounds; a call whose first run fails is skipped with its reason.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::bench {

using ForwardFn = std::function<Status(const AttentionForwardArgs&, Stream)>;

// A hopattn forward call through experimental::attention_forward: `kernel` a registry name ("" or
// "default": the defaults table's choice), optionally followed by +KEY=VALUE experiments of its
// own (e.g. "default+varlen_pdl=0"), applied after the --override experiments. Throws
// std::invalid_argument on an unknown key.
ForwardFn hopattn_forward_fn(const std::string& kernel, const std::vector<std::pair<std::string, double>>& overrides);

// The keys of --override and of a --kernels entry's +KEY=VALUE (experimental::Overrides' forward fields).
const std::vector<std::string>& forward_override_keys();

// One timed row of a cell: its name (the row's impl), the call and its arguments.
struct TimedCall {
  std::string name;
  ForwardFn fn;
  AttentionForwardArgs args;
};

struct RoundsTiming {
  bool timed = false;       // false: the first call failed (the reason is in `reason` and `skipped`)
  std::string reason;       // why the call was not timed (its first failure), or ""
  double ms = 0;            // median over the rounds, per call
  std::string rounds_note;  // "median of R rounds, LO-HI ms" when R > 1, else ""
  std::string gpu_state;    // describe_gpu_states of the samples after each round, or ""
};

// Times `calls` opt.rounds times, interleaved: round r starts with call (rotation + r) % n and goes
// on in list order, wrapping around (so that none is always timed late in a long cell); before
// round 0 the call it starts with runs opt.warmup_ms untimed. Each timing is time_launches of
// about opt.target_group_ms per group (back to back). A call that fails on its first run in
// round 0 is skipped (skipped[name] = its first reason) and not timed again.
std::vector<RoundsTiming> time_in_rounds(const std::vector<TimedCall>& calls, size_t rotation, const BenchOptions& opt,
                                         Stream stream, int device, std::map<std::string, std::string>* skipped);

// The attention sections' inputs: q, k, v (elems each) N(0, 1) in opt.dtype (seeds 1, 2, 3), sinks
// (sink_heads fp32, seed 4) when given; with --bf16-values and --dtype fp16 the same normal values
// rounded to bf16's 8-bit significand first (exact in fp16), to tell whether fp16's speed gap to
// bf16 follows the data (more toggling significand bits, more power at a power-capped clock) or
// the dtype. Synchronises `stream` before returning.
void fill_attention_inputs(void* q, void* k, void* v, int64_t elems, void* sinks, int sink_heads, const BenchOptions& opt,
                           Stream stream);

}  // namespace hopattn::bench
