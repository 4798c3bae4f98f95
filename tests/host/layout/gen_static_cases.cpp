// Writes the compile-time CuTe cases (static_cases.hpp) to the file named on the command line.
//
// Candidates are drawn with a fixed seed from the grid. A case can only be instantiated
// if none of CuTe's static_asserts fires, so the generator carries a model of those checks
// (CuTe 4.2, include/cute/layout.hpp): for composition the "Stride Divisibility Condition" and
// "Shape Divisibility Condition" on A's coalesced leaves, for complement the "Non-injective
// Layout detected in complement" check. Were the model wrong about a case it lets through, the
// generated file would not compile, so the model cannot silently let a rejection pass.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algebra.hpp"
#include "layout.hpp"

namespace hopattn::layout::generator {
namespace {

constexpr std::uint64_t kSeed = 0x6c61796f7574;  // fixed: the generated file is reproducible
constexpr int kCasesPerFunction = 20;            // keeps each generated function cheap to compile
const std::vector<Int> kShapes = {1, 2, 3, 4, 6, 8};
constexpr Int kMaxStride = 24;
constexpr Int kMaxM = 64;

Int ceil_div(Int a, Int b) { return (a + b - 1) / b; }

// CuTe's coalesce of a static layout. `extended` selects coalesce_x (used by composition), which
// keeps the last stride by standing in shape 2 for a last shape 1.
std::vector<Mode> cute_coalesce(const std::vector<Mode>& leaves, bool extended) {
  std::vector<Mode> out{leaves.back()};
  if (extended && out[0].shape == 1) out[0].shape = 2;
  for (std::size_t i = leaves.size() - 1; i-- > 0;) {
    const Mode& mode = leaves[i];
    if (mode.shape == 1) continue;
    if (out.size() == 1 && out[0].shape == 1) {
      out[0] = mode;
    } else if (mode.shape * mode.stride == out[0].stride) {
      out[0] = Mode{mode.shape * out[0].shape, mode.stride};
    } else {
      out.insert(out.begin(), mode);
    }
  }
  if (out.size() == 1 && out[0].shape == 1) out[0] = Mode{1, 0};
  return out;
}

// The static_assert that cute::composition(A, B) fails with, if any.
std::optional<std::string> composition_rejection(const Layout& a, const Layout& b) {
  const std::vector<Mode> lhs = cute_coalesce(a.modes(), true);
  if (lhs.size() == 1) return std::nullopt;  // an integer A composes without checks
  for (const Mode& leaf : b.modes()) {
    if (leaf.stride == 0) continue;  // a static stride 0 takes a shortcut
    Int rest_shape = leaf.shape;
    Int rest_stride = leaf.stride;
    for (std::size_t i = 0; i + 1 < lhs.size(); ++i) {
      const Int shape = lhs[i].shape;
      if (rest_stride % shape != 0 && rest_stride >= shape) return "Stride Divisibility Condition";
      const Int next_shape = ceil_div(shape, rest_stride);
      const Int next_stride = ceil_div(rest_stride, shape);
      if (next_shape != 1 && rest_shape != 1) {
        const Int new_shape = std::min(next_shape, rest_shape);
        if (rest_shape % new_shape != 0) return "Shape Divisibility Condition";
        rest_shape /= new_shape;
      }
      rest_stride = next_stride;
    }
  }
  return std::nullopt;
}

// The static_assert that cute::complement(A, M) fails with, if any.
std::optional<std::string> complement_rejection(const Layout& a) {
  std::vector<Mode> leaves = a.modes();
  for (Mode& mode : leaves) {
    if (mode.stride == 0) mode.shape = 1;  // filter_zeros
  }
  std::vector<Mode> rest = cute_coalesce(leaves, false);
  if (rest.size() == 1 && rest[0].stride == 0) return std::nullopt;  // the stride-0 shortcut
  Int last_stride = 1;
  while (!rest.empty()) {
    std::size_t smallest = 0;  // the first leaf with the smallest stride, as cute::find picks it
    for (std::size_t i = 1; i < rest.size(); ++i) {
      if (rest[i].stride < rest[smallest].stride) smallest = i;
    }
    if (rest[smallest].stride / last_stride == 0) return "Non-injective Layout detected in complement.";
    last_stride = rest[smallest].stride * rest[smallest].shape;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(smallest));
  }
  return std::nullopt;
}

std::string cute_int(Int value) { return "CInt<" + std::to_string(value) + ">{}"; }

std::string cute_tuple(const std::vector<Mode>& modes, bool shapes) {
  std::string out = "cute::make_tuple(";
  for (std::size_t k = 0; k < modes.size(); ++k) {
    if (k > 0) out += ", ";
    out += cute_int(shapes ? modes[k].shape : modes[k].stride);
  }
  return out + ")";
}

// A static cute::Layout expression for a flat layout.
std::string cute_layout(const Layout& layout) {
  const std::vector<Mode>& modes = layout.modes();
  if (modes.size() == 1) {
    return "cute::make_layout(" + cute_int(modes[0].shape) + ", " + cute_int(modes[0].stride) + ")";
  }
  return "cute::make_layout(" + cute_tuple(modes, true) + ", " + cute_tuple(modes, false) + ")";
}

Layout random_layout(std::mt19937_64& rng, int rank) {
  std::vector<Mode> modes;
  for (int k = 0; k < rank; ++k) {
    const Int shape = kShapes[rng() % kShapes.size()];
    modes.push_back(Mode{shape, static_cast<Int>(rng() % (kMaxStride + 1))});
  }
  return Layout::flat(std::move(modes));
}

struct Case {
  Layout a;
  Layout b;
  Int m = 0;
  std::string call;  // the CuTe call, e.g. "cute::composition(A, B)"
};

struct Population {
  std::string operation;
  int drawn = 0, hold = 0, hold_rejected = 0, fail = 0, fail_rejected = 0;
};

struct Rejection {
  std::string expression;
  std::string assertion;
};

struct Collected {
  std::vector<Case> cases;
  Population population;
  std::vector<Rejection> rejections;
};

// Draws candidates until both quotas (conditions hold / fail, CuTe accepts) are filled.
template <class Draw, class Holds, class Rejects, class Make, class Text>
Collected collect(const std::string& operation, int hold_quota, int fail_quota, Draw draw,
                  Holds holds, Rejects rejects, Make make, Text text) {
  Collected out;
  out.population.operation = operation;
  int hold_taken = 0, fail_taken = 0;
  while (hold_taken < hold_quota || fail_taken < fail_quota) {
    const auto candidate = draw();
    const bool ok = holds(candidate);
    const std::optional<std::string> rejection = rejects(candidate);
    Population& p = out.population;
    ++p.drawn;
    (ok ? p.hold : p.fail) += 1;
    if (rejection) {
      (ok ? p.hold_rejected : p.fail_rejected) += 1;
      if (ok) out.rejections.push_back(Rejection{text(candidate), *rejection});
      continue;
    }
    int& taken = ok ? hold_taken : fail_taken;
    if (taken < (ok ? hold_quota : fail_quota)) {
      ++taken;
      out.cases.push_back(make(candidate));
    }
  }
  return out;
}

Collected compositions(std::mt19937_64& rng) {
  using Pair = std::pair<Layout, Layout>;
  Collected out = collect(
      "composition", 160, 100,
      [&] { return Pair{random_layout(rng, 1 + static_cast<int>(rng() % 3)), random_layout(rng, 1 + static_cast<int>(rng() % 2))}; },
      [](const Pair& p) { return compose(p.first, p.second, Explain::kNo).verdict.holds; },
      [](const Pair& p) { return composition_rejection(p.first, p.second); },
      [](const Pair& p) { return Case{p.first, p.second, 0, "cute::composition(a, b)"}; },
      [](const Pair& p) { return p.first.str() + " o " + p.second.str(); });
  // The note's examples: its introduction (CuTe accepts the pair and returns a wrong layout) and
  // Warning 2.21 (CUTLASS 3.3 rejected it statically; the note's answer is (2,3):(9,5)).
  const std::pair<Layout, Layout> pinned[] = {
      {Layout::flat({{6, 1}, {2, 7}}), Layout::flat({{3, 2}, {2, 3}})},
      {Layout::flat({{4, 2}, {6, 3}, {8, 5}, {10, 7}}), Layout::single(6, 12)},
  };
  for (const auto& [a, b] : pinned) out.cases.push_back(Case{a, b, 0, "cute::composition(a, b)"});
  return out;
}

Collected complements(std::mt19937_64& rng) {
  using Pair = std::pair<Layout, Int>;
  Collected out = collect(
      "complement", 80, 60,
      [&] { return Pair{random_layout(rng, 1 + static_cast<int>(rng() % 3)), 1 + static_cast<Int>(rng() % kMaxM)}; },
      [](const Pair& p) { return complement(p.first, p.second, Explain::kNo).verdict.holds; },
      [](const Pair& p) { return complement_rejection(p.first); },
      [](const Pair& p) { return Case{p.first, Layout(), p.second, "cute::complement(a, m)"}; },
      [](const Pair& p) { return "complement(" + p.first.str() + ", " + std::to_string(p.second) + ")"; });
  // Example 2.10 of the note: complement(4:2, 19).
  out.cases.push_back(Case{Layout::single(4, 2), Layout(), 19, "cute::complement(a, m)"});
  return out;
}

std::vector<Case> coalesces(std::mt19937_64& rng) {
  std::vector<Case> out;
  for (int i = 0; i < 40; ++i) {
    out.push_back(Case{random_layout(rng, 2 + i % 2), Layout(), 0, "cute::coalesce(a)"});
  }
  return out;
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

void write_case(std::ostream& out, const Case& c) {
  const bool binary = c.call.find(", b)") != std::string::npos;
  out << "  {\n    auto a = " << cute_layout(c.a) << ";\n";
  if (binary) out << "    auto b = " << cute_layout(c.b) << ";\n";
  if (c.m > 0) out << "    auto m = " << cute_int(c.m) << ";\n";
  out << "    cases.push_back(StaticCase{" << quoted(c.a.str()) << ", " << quoted(binary ? c.b.str() : "")
      << ", " << c.m << ", from_cute(" << c.call << ")});\n  }\n";
}

// Writes the cases as functions of kCasesPerFunction cases each, plus the accessor `name`.
void write_cases(std::ostream& out, const std::string& name, const std::vector<Case>& cases) {
  int chunks = 0;
  for (std::size_t begin = 0; begin < cases.size(); begin += kCasesPerFunction, ++chunks) {
    out << "void " << name << "_" << chunks << "(std::vector<StaticCase>& cases) {\n";
    for (std::size_t i = begin; i < cases.size() && i < begin + kCasesPerFunction; ++i) write_case(out, cases[i]);
    out << "}\n\n";
  }
  out << "}  // namespace\n\nstd::vector<StaticCase> " << name << "() {\n  std::vector<StaticCase> cases;\n";
  for (int i = 0; i < chunks; ++i) out << "  " << name << "_" << i << "(cases);\n";
  out << "  return cases;\n}\n\nnamespace {\n\n";
}

void write_file(std::ostream& out, const Collected& comp, const Collected& compl_, const std::vector<Case>& coal) {
  out << "// Generated by gen_static_cases (tests/host/layout/gen_static_cases.cpp). Do not edit.\n"
      << "#include \"static_cases.hpp\"\n\n#include \"cute_convert.hpp\"\n\n"
      << "namespace hopattn::layout::static_cases {\nnamespace {\n\n"
      << "template <int N>\nusing CInt = cute::Int<N>;\nusing cute_convert::from_cute;\n\n";
  write_cases(out, "compositions", comp.cases);
  write_cases(out, "complements", compl_.cases);
  write_cases(out, "coalesces", coal);
  out << "}  // namespace\n\nstd::vector<Population> populations() {\n  return {\n";
  for (const Collected* c : {&comp, &compl_}) {
    const Population& p = c->population;
    out << "      {" << quoted(p.operation) << ", " << p.drawn << ", " << p.hold << ", " << p.hold_rejected
        << ", " << p.fail << ", " << p.fail_rejected << "},\n";
  }
  out << "  };\n}\n\nstd::vector<Rejection> admissible_rejections() {\n  return {\n";
  for (const Collected* c : {&comp, &compl_}) {
    for (const Rejection& r : c->rejections) {
      out << "      {" << quoted(r.expression) << ", " << quoted(r.assertion) << "},\n";
    }
  }
  out << "  };\n}\n\n}  // namespace hopattn::layout::static_cases\n";
}

}  // namespace
}  // namespace hopattn::layout::generator

int main(int argc, char** argv) {
  using namespace hopattn::layout::generator;
  if (argc != 2) {
    std::cerr << "usage: gen_static_cases OUTPUT.cpp\n";
    return 2;
  }
  std::mt19937_64 rng(kSeed);
  const Collected comp = compositions(rng);
  const Collected compl_ = complements(rng);
  const std::vector<Case> coal = coalesces(rng);
  std::ostringstream text;
  write_file(text, comp, compl_, coal);
  // Rewrite only on change, so that an unchanged file does not trigger a rebuild.
  std::ifstream existing(argv[1]);
  std::stringstream old;
  old << existing.rdbuf();
  if (old.str() == text.str()) return 0;
  std::ofstream out(argv[1]);
  out << text.str();
  return out ? 0 : 1;
}
