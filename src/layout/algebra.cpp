#include "algebra.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace hopattn::layout {

namespace {

using std::to_string;

// a | b for a positive divisor; "0 divides b" is never used as a condition of the note.
bool divides(Int a, Int b) { return a > 0 && b % a == 0; }

std::string interval_str(Interval interval) {
  return "[" + to_string(interval.lo) + "," + to_string(interval.hi) + "]";
}

std::vector<Int> shapes_of(const std::vector<Mode>& modes) {
  std::vector<Int> result;
  for (const Mode& mode : modes) result.push_back(mode.shape);
  return result;
}

// The shape tuple of A as the composition sees it, with the last entry printed as "inf" when
// the note's extension is meant.
std::string extended_shape_str(const std::vector<Mode>& modes) {
  std::string out = modes.size() > 1 ? "(" : "";
  for (std::size_t k = 0; k + 1 < modes.size(); ++k) out += to_string(modes[k].shape) + ",";
  out += "inf";
  if (modes.size() > 1) out += ")";
  return out;
}

// Names a leaf of B in messages: "B" for an integer layout, "mode k of B" otherwise.
std::string leaf_label(const Layout& b, std::size_t k) {
  const Mode& mode = b.modes()[k];
  const std::string value = to_string(mode.shape) + ":" + to_string(mode.stride);
  if (b.modes().size() == 1) return "B = " + value;
  return (b.is_flat() ? "mode " : "leaf ") + to_string(k) + " of B (" + value + ")";
}

struct ModeComposition {
  bool ok = false;
  std::vector<Mode> modes;
  std::string text;  // the step (ok) or the failure (not ok)
};

// The remaining factorization of Definition 2.11 (a): (M_i/c, M_{i+1}, ..., M_{alpha-1}, inf),
// each factor paired with the stride of A that goes with it. The last factor is infinite.
std::vector<Mode> remaining_factors(const std::vector<Mode>& s, std::size_t i, Int c) {
  std::vector<Mode> rest{Mode{s[i].shape / c, checked_mul(c, s[i].stride)}};
  for (std::size_t k = i + 1; k < s.size(); ++k) rest.push_back(s[k]);
  return rest;
}

// One mode N:r of B against A's composition shape `s` (its last leaf is the extended one), with
// what the messages need.
struct ModeContext {
  const std::vector<Mode>& s;
  Mode b;
  bool say;
  std::string label;    // names the mode of B
  std::string shape_a;  // A's shape in CuTe notation
};

ModeComposition success(const ModeContext& ctx, std::vector<Mode> modes, const std::string& why) {
  ModeComposition out;
  out.ok = true;
  out.modes = std::move(modes);
  if (ctx.say) out.text = ctx.label + ": " + why + "; composes to " + Layout::flat(out.modes).str();
  return out;
}

ModeComposition failure(const ModeContext& ctx, const std::string& why) {
  ModeComposition out;
  if (ctx.say) out.text = why + " (" + ctx.label + ")";
  return out;
}

// Modes that compose without conditions: shape 1 (stripped, section 2.2) and stride 0 (outside
// the note; f^_A(0) = 0).
std::optional<ModeComposition> trivial_mode(const ModeContext& ctx) {
  if (ctx.b.shape == 1) return success(ctx, {Mode{1, 0}}, "shape 1, stripped (section 2.2)");
  if (ctx.b.stride == 0) {
    return success(ctx, {Mode{ctx.b.shape, 0}}, "stride 0 (outside the note, footnote 2): f^_A(0*x) = 0");
  }
  return std::nullopt;
}

// Definition 2.11: the division index i (the mode of A the stride falls into) and the product
// of the shapes before it.
struct Division {
  std::size_t index = 0;
  Int prefix = 1;
};

Division division_of(const std::vector<Mode>& s, Int stride) {
  Division d;
  while (d.index + 1 < s.size() && stride >= checked_mul(d.prefix, s[d.index].shape)) {
    d.prefix *= s[d.index].shape;
    ++d.index;
  }
  return d;
}

std::string left_division_failure(const ModeContext& ctx, const Division& d) {
  const Int r = ctx.b.stride;
  const std::string head = "stride " + to_string(r) + " of B does not left-divide the shape " +
                           ctx.shape_a + " of A: ";
  if (r % d.prefix != 0) {
    return head + "it falls in mode " + to_string(d.index) + " of A, and the product " +
           to_string(d.prefix) + " of the shapes before that mode does not divide " + to_string(r);
  }
  const Int c = r / d.prefix;
  return head + to_string(r) + " = " + to_string(d.prefix) + "*" + to_string(c) + " falls in mode " +
         to_string(d.index) + " of A, and " + to_string(c) + " does not divide its shape " +
         to_string(ctx.s[d.index].shape);
}

// Definition 2.12 (2) and 2.13: N must be weakly left divisible by (M_i/c, M_{i+1}, ..., inf).
ModeComposition weakly_divide(const ModeContext& ctx, std::size_t i, Int c) {
  const std::vector<Mode> rest = remaining_factors(ctx.s, i, c);
  const std::size_t finite = rest.size() - 1;
  const Int n = ctx.b.shape;
  Int q = 1;
  std::size_t j = 0;
  while (j < finite && n >= checked_mul(q, rest[j].shape)) q *= rest[j].shape, ++j;
  if (n % q != 0) {
    return failure(ctx, "shape " + to_string(n) + " of B is not weakly left-divisible by " +
                            extended_shape_str(rest) + ", what remains of A's shape " + ctx.shape_a +
                            " after stride " + to_string(ctx.b.stride) + ": it spans the first " +
                            to_string(j) + " factor(s), whose product " + to_string(q) +
                            " does not divide " + to_string(n));
  }
  std::vector<Mode> modes(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(j));
  if (n / q > 1) modes.push_back(Mode{n / q, rest[j].stride});
  return success(ctx, std::move(modes),
                 ctx.say ? "stride " + to_string(ctx.b.stride) + " left-divides " + ctx.shape_a +
                               " (division index " + to_string(i) + ", c = " + to_string(c) +
                               "), shape " + to_string(n) + " weakly left-divides the rest " +
                               extended_shape_str(rest)
                         : "");
}

// Definitions 2.12 and 2.13 for one mode N:r of B.
ModeComposition compose_mode(const std::vector<Mode>& s, Mode b, Explain explain,
                             const std::string& label) {
  const bool say = explain == Explain::kYes;
  const ModeContext ctx{s, b, say, label, say ? tuple_str(shapes_of(s)) : ""};
  if (std::optional<ModeComposition> trivial = trivial_mode(ctx)) return *trivial;
  const Division d = division_of(s, b.stride);
  const std::size_t alpha = s.size() - 1;
  const bool divisible = b.stride % d.prefix == 0;
  const Int c = divisible ? b.stride / d.prefix : 0;
  if (!divisible || (d.index < alpha && s[d.index].shape % c != 0)) {
    return failure(ctx, say ? left_division_failure(ctx, d) : "");
  }
  if (d.index == alpha) {
    return success(ctx, {Mode{b.shape, checked_mul(c, s[alpha].stride)}},
                   say ? "stride " + to_string(b.stride) + " = " + to_string(d.prefix) + "*" +
                             to_string(c) + " reaches A's last, extended mode"
                       : "");
  }
  return weakly_divide(ctx, d.index, c);
}

// M' of Definition 2.16: the product of all shapes but the last (extended) one.
Int inner_size(const Layout& shape_a) {
  const std::vector<Mode>& s = shape_a.modes();
  Int inner = 1;
  for (std::size_t k = 0; k + 1 < s.size(); ++k) inner = checked_mul(inner, s[k].shape);
  return inner;
}

Interval interval_within(Int inner, Mode b_mode) {
  if (b_mode.shape <= 1 || b_mode.stride == 0) return Interval{};
  const Int hi = checked_mul(b_mode.stride, b_mode.shape - 1);
  return Interval{b_mode.stride, std::min(hi, inner - 1)};
}

void fail(Verdict& verdict, Explain explain, std::string text) {
  verdict.holds = false;
  if (explain == Explain::kYes) verdict.failures.push_back(std::move(text));
}

void step(Verdict& verdict, Explain explain, std::string text) {
  if (explain == Explain::kYes) verdict.steps.push_back(std::move(text));
}

// Prefixes every statement of `inner` and appends it to `outer`.
void absorb(Verdict& outer, const Verdict& inner, const std::string& prefix) {
  for (const std::string& s : inner.steps) outer.steps.push_back(prefix + s);
  for (const std::string& s : inner.failures) outer.failures.push_back(prefix + s);
  outer.holds = outer.holds && inner.holds;
}

}  // namespace

std::string tuple_str(const std::vector<Int>& values) {
  if (values.size() == 1) return to_string(values[0]);
  std::string out = "(";
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (k > 0) out += ",";
    out += to_string(values[k]);
  }
  return out + ")";
}

Layout sort_layout(const Layout& layout) {
  std::vector<Mode> modes = layout.modes();
  std::stable_sort(modes.begin(), modes.end(), [](const Mode& x, const Mode& y) {
    return x.stride != y.stride ? x.stride < y.stride : x.shape < y.shape;
  });
  return Layout::flat(std::move(modes));
}

Layout coalesce(const Layout& layout) {
  std::vector<Mode> merged;
  for (const Mode& mode : layout.modes()) {
    if (mode.shape == 1) continue;
    if (!merged.empty() && mode.stride == merged.back().shape * merged.back().stride) {
      merged.back().shape = checked_mul(merged.back().shape, mode.shape);
    } else {
      merged.push_back(mode);
    }
  }
  if (merged.empty()) return Layout();
  return Layout::flat(std::move(merged));
}

Layout composition_shape(const Layout& a) {
  const std::vector<Mode>& leaves = a.modes();
  std::vector<Mode> kept;
  for (std::size_t k = 0; k + 1 < leaves.size(); ++k) {
    if (leaves[k].shape != 1) kept.push_back(leaves[k]);
  }
  kept.push_back(leaves.back());
  return Layout::flat(std::move(kept));
}

Interval interval_of_definition(const Layout& a, Mode b_mode) {
  return interval_within(inner_size(composition_shape(a)), b_mode);
}

namespace {

// Definition 2.5 on A sorted: N_{i-1} d_{i-1} | d_i, and N_alpha d_alpha | M.
void check_complement(const std::vector<Mode>& sorted, Int m, Verdict& verdict, Explain explain) {
  const bool say = explain == Explain::kYes;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const Mode& mode = sorted[i];
    const Int span = checked_mul(mode.shape, mode.stride);
    const bool last = i + 1 == sorted.size();
    const Int next = last ? m : sorted[i + 1].stride;
    const bool ok = divides(span, next);
    if (!ok && !say) {
      verdict.holds = false;
      return;
    }
    if (!say) continue;
    std::string text = to_string(mode.shape) + "*" + to_string(mode.stride) + " = " + to_string(span) +
                       (ok ? " divides " : " does not divide ") + (last ? "M = " : "the next stride ") +
                       to_string(next);
    if (ok) {
      step(verdict, explain, std::move(text));
      continue;
    }
    text += " (A sorted: " + Layout::flat(sorted).str() + ")";
    if (mode.stride == 0) text += "; the note excludes zero strides (footnote 2)";
    fail(verdict, explain, std::move(text));
  }
}

// Definition 2.6: (d_0, d_1/(N_0 d_0), ..., M/(N_alpha d_alpha)) : (1, N_0 d_0, ..., N_alpha d_alpha).
Layout complement_closed_form(const std::vector<Mode>& sorted, Int m) {
  std::vector<Mode> modes{Mode{sorted[0].stride, 1}};
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const Int span = sorted[i].shape * sorted[i].stride;
    const Int next = i + 1 == sorted.size() ? m : sorted[i + 1].stride;
    modes.push_back(Mode{next / span, span});
  }
  return Layout::flat(std::move(modes));
}

// Definition 2.17 (2): the intervals of definition of B's leaves must be pairwise disjoint.
void check_disjoint(const Layout& shape_a, const Layout& b, Verdict& verdict, Explain explain) {
  const std::vector<Mode>& leaves = b.modes();
  const Int inner = inner_size(shape_a);
  std::vector<Interval> intervals;
  for (const Mode& leaf : leaves) intervals.push_back(interval_within(inner, leaf));
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    for (std::size_t l = k + 1; l < leaves.size(); ++l) {
      const Interval x = intervals[k];
      const Interval y = intervals[l];
      if (x.empty() || y.empty() || x.hi < y.lo || y.hi < x.lo) continue;
      verdict.holds = false;
      if (explain == Explain::kNo) continue;
      fail(verdict, explain,
           "the intervals of definition " + interval_str(x) + " of " + leaf_label(b, k) + " and " +
               interval_str(y) + " of " + leaf_label(b, l) +
               " intersect (Definition 2.17): these modes of B overlap inside A's shape " +
               tuple_str(shapes_of(shape_a.modes())));
    }
  }
  if (verdict.holds && leaves.size() > 1) {
    step(verdict, explain, "the intervals of definition of B's modes are pairwise disjoint");
  }
}

}  // namespace

Outcome complement(const Layout& a, Int m, Explain explain) {
  Outcome out;
  if (m < 1) {
    fail(out.verdict, explain, "M = " + to_string(m) + " must be a positive integer");
    return out;
  }
  const std::vector<Mode> sorted = sort_layout(a).modes();
  if (explain == Explain::kYes) {
    step(out.verdict, explain, "A sorted by stride (Definition 2.4): " + Layout::flat(sorted).str());
  }
  check_complement(sorted, m, out.verdict, explain);
  if (out.verdict.holds) out.result = complement_closed_form(sorted, m);
  return out;
}

Outcome compose(const Layout& a, const Layout& b, Explain explain) {
  Outcome out;
  Verdict& verdict = out.verdict;
  const Layout shape_a = composition_shape(a);
  if (explain == Explain::kYes && shape_a.modes().size() != a.modes().size()) {
    step(verdict, explain, "shape-1 modes of A stripped (section 2.2): " + shape_a.str());
  }
  const std::vector<Mode>& leaves = b.modes();
  std::vector<Layout> parts;
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const std::string label = explain == Explain::kYes ? leaf_label(b, k) : "";
    ModeComposition mode = compose_mode(shape_a.modes(), leaves[k], explain, label);
    if (mode.ok) {
      step(verdict, explain, std::move(mode.text));
      parts.push_back(Layout::flat(std::move(mode.modes)));
    } else {
      fail(verdict, explain, std::move(mode.text));
    }
  }
  check_disjoint(shape_a, b, verdict, explain);
  if (verdict.holds) out.result = replace_leaves(b, parts);
  return out;
}

Outcome logical_divide(const Layout& a, const Layout& b, Explain explain) {
  Outcome out;
  const Int m = a.size();
  const Outcome rest = complement(b, m, explain);
  absorb(out.verdict, rest.verdict, "complement(B, size(A) = " + to_string(m) + "): ");
  const Outcome tile = compose(a, b, explain);
  absorb(out.verdict, tile.verdict, "A o B: ");
  if (!out.verdict.holds) return out;
  // Lemma 2.23 says the pair {S, (B, complement)} is then admissible; it is checked, not assumed.
  const Layout divisor = Layout::tuple({b, *rest.result});
  const Outcome whole = compose(a, divisor, explain);
  if (!whole.verdict.holds) {
    absorb(out.verdict, whole.verdict, "A o " + divisor.str() + ": ");
    fail(out.verdict, explain,
         "Definition 2.22's conditions hold, but (B, complement(B, size(A))) = " + divisor.str() +
             " is not admissible for composition with A, contrary to Lemma 2.23 of the note");
    return out;
  }
  step(out.verdict, explain,
       "A / B = A o " + divisor.str() + " (Lemma 2.23: admissible for composition)");
  out.result = whole.result;
  return out;
}

Outcome logical_product(const Layout& a, const Layout& b, Explain explain) {
  Outcome out;
  const Int m = checked_mul(a.size(), b.cosize());
  const Outcome rest = complement(a, m, explain);
  absorb(out.verdict, rest.verdict,
         "complement(A, size(A)*cosize(B) = " + to_string(m) + "): ");
  if (!out.verdict.holds) return out;
  const Outcome repeated = compose(*rest.result, b, explain);
  absorb(out.verdict, repeated.verdict, "complement(A, " + to_string(m) + ") o B: ");
  if (!out.verdict.holds) return out;
  out.result = Layout::tuple({a, *repeated.result});
  return out;
}

Layout right_inverse(const Layout& a) {
  const std::vector<Mode>& leaves = a.modes();
  std::vector<Int> prefix(leaves.size(), 1);  // colexicographic weight of each leaf of A
  for (std::size_t k = 1; k < leaves.size(); ++k) prefix[k] = checked_mul(prefix[k - 1], leaves[k - 1].shape);
  std::vector<bool> used(leaves.size(), false);
  std::vector<Mode> chain;
  Int next = 1;  // the stride the next leaf of the chain must have
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t k = 0; k < leaves.size(); ++k) {
      if (used[k] || leaves[k].shape == 1 || leaves[k].stride != next) continue;
      used[k] = true;
      chain.push_back(Mode{leaves[k].shape, prefix[k]});
      next = checked_mul(leaves[k].shape, leaves[k].stride);
      grew = true;
      break;
    }
  }
  if (chain.empty()) return Layout();
  return Layout::flat(std::move(chain));
}

Outcome left_inverse(const Layout& a, Explain explain) {
  Outcome out;
  Verdict& verdict = out.verdict;
  // Work on A's leaves with their colexicographic weights; shape-1 leaves carry no information.
  struct Leaf {
    Mode mode;
    Int weight;
  };
  std::vector<Leaf> leaves;
  Int weight = 1;
  for (const Mode& mode : a.modes()) {
    if (mode.shape > 1) leaves.push_back(Leaf{mode, weight});
    weight = checked_mul(weight, mode.shape);
  }
  if (leaves.empty()) {
    out.result = Layout();
    return out;
  }
  std::stable_sort(leaves.begin(), leaves.end(), [](const Leaf& x, const Leaf& y) {
    return x.mode.stride < y.mode.stride;
  });
  if (leaves[0].mode.stride == 0) {
    fail(verdict, explain,
         "A is not injective: its mode " + to_string(leaves[0].mode.shape) + ":0 has stride 0");
    return out;
  }
  std::vector<Mode> modes{Mode{leaves[0].mode.stride, 0}};
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    const Mode& mode = leaves[k].mode;
    if (k + 1 == leaves.size()) {
      modes.push_back(Mode{mode.shape, leaves[k].weight});
      break;
    }
    const Int next = leaves[k + 1].mode.stride;
    const Int span = checked_mul(mode.shape, mode.stride);
    if (next % mode.stride != 0 || span > next) {
      fail(verdict, explain,
           "no left inverse of this form: after stride " + to_string(mode.stride) +
               " with shape " + to_string(mode.shape) + " the next stride " + to_string(next) +
               (next % mode.stride != 0 ? " is not a multiple of " + to_string(mode.stride)
                                        : " is smaller than " + to_string(span) +
                                              ", so A is not injective"));
      return out;
    }
    modes.push_back(Mode{next / mode.stride, leaves[k].weight});
  }
  out.result = Layout::flat(std::move(modes));
  return out;
}

}  // namespace hopattn::layout
