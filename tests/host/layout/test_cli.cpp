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

}  // namespace
}  // namespace hopattn::layout
