// The `hopattn layout` command: exit codes and output for good and malformed expressions.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "layout_command.hpp"

namespace hopattn::layout {
namespace {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// Swaps a stream's buffer for the lifetime of the object.
class Capture {
 public:
  Capture(std::ostream& stream, std::ostringstream& sink) : stream_(stream), old_(stream.rdbuf(sink.rdbuf())) {}
  ~Capture() { stream_.rdbuf(old_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

 private:
  std::ostream& stream_;
  std::streambuf* old_;
};

CliRun run(std::vector<std::string> args) {
  args.insert(args.begin(), "layout");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  std::ostringstream out;
  std::ostringstream err;
  CliRun result;
  {
    Capture capture_out(std::cout, out);
    Capture capture_err(std::cerr, err);
    result.code = run_layout_command(static_cast<int>(argv.size()), argv.data());
  }
  result.out = out.str();
  result.err = err.str();
  return result;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(layout_cli, CompositionThatFailsTheConditions) {
  const CliRun r = run({"(6,2):(1,7) o (3,2):(2,3)", "--check"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "conditions   FAIL")) << r.out;
  EXPECT_TRUE(contains(r.out, "intervals of definition [2,4]")) << r.out;
  EXPECT_TRUE(contains(r.out, "cute verdict WRONG: differs from f^_A o f_B at x = 5: CuTe gives 7, the true value is 8"))
      << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(layout_cli, ComplementThatHolds) {
  const CliRun r = run({"complement(4:2, 24)"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "result       (2,3):(1,8)")) << r.out;
  // The value table, laid out like cute::print_layout.
  EXPECT_TRUE(contains(r.out, " 0  |  0 |  8 | 16 |")) << r.out;
  EXPECT_TRUE(contains(r.out, " 1  |  1 |  9 | 17 |")) << r.out;
  EXPECT_FALSE(contains(r.out, "cute")) << "--check not given";
}

TEST(layout_cli, ComplementThatFailsWithCheck) {
  const CliRun r = run({"--check", "complement(4:2, 19)"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "4*2 = 8 does not divide M = 19")) << r.out;
  EXPECT_TRUE(contains(r.out, "cute         (2,3):(1,8)")) << r.out;
  EXPECT_TRUE(contains(r.out, "cute verdict WRONG")) << r.out;
}

TEST(layout_cli, LogicalDivideThatHolds) {
  const CliRun r = run({"(8,4):(1,8) / 2:1", "--check"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "conditions   hold")) << r.out;
  EXPECT_TRUE(contains(r.out, "cute verdict RIGHT")) << r.out;
}

TEST(layout_cli, FailureInsideANestedExpression) {
  const CliRun r = run({"composition(complement(4:2, 19), 2:1)"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "fails at     complement(4:2, 19) (column 13)")) << r.out;
}

TEST(layout_cli, MalformedExpressionPointsAtTheColumn) {
  const CliRun r = run({"(6,2:(1,7)"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(contains(r.err, "expected ',' or ')' in a tuple")) << r.err;
  EXPECT_TRUE(contains(r.err, "  (6,2:(1,7)\n      ^ column 5")) << r.err;
}

TEST(layout_cli, WrongArgumentsAreUsageErrors) {
  EXPECT_EQ(run({"complement(4:2)"}).code, 2);
  const CliRun m = run({"complement(4:2, (2,2))"});
  EXPECT_EQ(m.code, 2);
  EXPECT_TRUE(contains(m.err, "must be a positive integer")) << m.err;
  EXPECT_EQ(run({}).code, 2);
  EXPECT_EQ(run({"--frobnicate", "8:1"}).code, 2);
}

TEST(layout_cli, HelpDocumentsTheExitStatus) {
  const CliRun r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "exit status:")) << r.out;
  EXPECT_TRUE(contains(r.out, "1  a condition fails")) << r.out;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Hostile inputs end with a clear error (exit 2), never a crash: nesting beyond the depth limit
// (tuples, calls, operator chains), inputs beyond the length limit.
TEST(layout_cli, DeepNestingIsAnErrorNotACrash) {
  for (const std::string& input :
       {repeat("(", 5000) + "1" + repeat(")", 5000), repeat("coalesce(", 1500) + "(2):(1)" + repeat(")", 1500),
        "(2):(1)" + repeat(" o (2):(1)", 300), repeat("sort(", 200) + "(2):(1)" + repeat(" o (2):(1)", 100) + repeat(")", 200)}) {
    const CliRun r = run({input});
    EXPECT_EQ(r.code, 2) << input.substr(0, 60) << "...: " << r.err.substr(0, 300);
    EXPECT_TRUE(contains(r.err, "levels deep")) << r.err.substr(0, 300);
  }
  const CliRun long_input = run({"(2):(1)" + repeat(" o (2):(1)", 3000)});
  EXPECT_EQ(long_input.code, 2);
  EXPECT_TRUE(contains(long_input.err, "the limit is 16384")) << long_input.err.substr(0, 300);
}

// Within the limits a long chain evaluates (the parser copies no quadratic amount of text).
TEST(layout_cli, LongChainWithinTheLimits) {
  const CliRun r = run({"(4,2):(2,1)" + repeat(" o (8):(1)", 200)});
  EXPECT_NE(r.code, 2) << r.err.substr(0, 300);
}

// Seeded random strings over the grammar's characters and names: every run ends with exit 0, 1
// or 2 and prints something; none crashes or hangs.
TEST(layout_cli, RandomInputsNeverCrash) {
  const char* kTokens[] = {"(", ")", ",", ":", " o ", " / ", " * ", "_", "0", "1", "2", "3", "8", "16", "65536",
                           "2147483647", "2147483648", "-1", "coalesce(", "composition(", "complement(", "sort(",
                           "left_inverse(", "right_inverse(", "logical_divide(", "logical_product(", "x", " "};
  uint64_t state = 20261203;
  auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull, state >> 33; };
  for (int it = 0; it < 3000; ++it) {
    std::string input;
    const int n = 1 + int(next() % 40);
    for (int j = 0; j < n; ++j) input += kTokens[next() % (sizeof(kTokens) / sizeof(kTokens[0]))];
    const CliRun r = run({input});
    ASSERT_TRUE(r.code == 0 || r.code == 1 || r.code == 2) << input;
    ASSERT_FALSE(r.out.empty() && r.err.empty()) << input;
  }
}

// A result whose extents overflow 64 bits (its size here is (2^31-1)^3) exits 2, not 0.
TEST(layout_cli, ResultBeyondTheLimitsExitsTwo) {
  const CliRun r = run({"(2147483647,2147483647,2147483647):(1,1,1)"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "cannot be computed within the checker's limits")) << r.err;
}

}  // namespace
}  // namespace hopattn::layout
