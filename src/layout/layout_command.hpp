// The `hopattn layout` subcommand.
#pragma once

namespace hopattn::layout {

// argv[0] is "layout"; argv[1..] are the user's arguments (the expression, --check, --help).
// Prints the report to stdout and errors to stderr. Returns the exit status:
//   0  the note's conditions hold (the result is printed),
//   1  a condition fails (the failing condition is stated),
//   2  malformed expression, bad usage, or an input beyond the checker's limits.
int run_layout_command(int argc, char** argv);

}  // namespace hopattn::layout
