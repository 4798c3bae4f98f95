// Evaluates a parsed expression with the note's closed forms.
#pragma once

#include <string>
#include <vector>

#include "algebra.hpp"
#include "parse.hpp"

namespace hopattn::layout {

// The operation an evaluation reports on: the whole expression, or the first operation (in
// evaluation order) whose conditions fail, since nothing after it is defined.
struct Evaluation {
  std::string operation;        // "layout", "composition", "complement", ...
  std::string text;             // its source text
  int column = 1;               // where it starts in the input
  std::vector<Layout> operands; // A (and B)
  Int m = 0;                    // the M of complement(A, M)
  Outcome outcome;              // the note's verdict and closed-form result
  bool whole = true;            // whether this is the whole expression
};

// Throws ParseError for an argument of the wrong kind (e.g. a layout where M must be an integer).
Evaluation evaluate_expression(const Expr& expr);

}  // namespace hopattn::layout
