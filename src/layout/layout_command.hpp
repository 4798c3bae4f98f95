// The `hopattn layout` subcommand.
#pragma once

#include <iosfwd>
#include <string>

namespace hopattn::layout {

// argv[0] is "layout"; argv[1..] are the user's arguments (the expression, --check, --help).
// Prints the report to stdout and errors to stderr. Returns the exit status:
//   0  the note's conditions hold (the result is printed),
//   1  a condition fails (the failing condition is stated),
//   2  malformed expression, bad usage, or an input beyond the checker's limits.
int run_layout_command(int argc, char** argv);

// The report for one expression (what `hopattn layout [--check] EXPR` prints) to `out`, errors
// to `err`; the same exit status. Behind the C ABI's hopattn_layout_report too.
int layout_report(const std::string& input, bool check, std::ostream& out, std::ostream& err);

}  // namespace hopattn::layout
