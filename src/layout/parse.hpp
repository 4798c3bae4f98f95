// Parser for layouts and layout expressions in CuTe's notation.
//
//   layout     := tuple [':' tuple]        e.g. (6,2):(1,7), 8:1, ((2,2),2):((4,1),2), (4,8)
//   tuple      := integer | '(' tuple {',' tuple} ')'
//   integer    := ['_'] digits             CuTe's static "_8" reads as 8
//   expression := operand {op operand}     op: 'o' or U+2218 (composition), '/' (logical
//                                          divide), '*' (logical product); left to right
//   operand    := layout | name '(' expression {',' expression} ')'
//
// A layout without strides gets CuTe's default, column-major compact strides. An integer
// argument (the M of complement(A, M)) is written as a plain integer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "layout.hpp"

namespace hopattn::layout {

// A malformed input, with the 1-based column (in bytes) where it was noticed.
class ParseError : public LayoutError {
 public:
  ParseError(const std::string& message, int column)
      : LayoutError(message), column_(column) {}
  int column() const { return column_; }

 private:
  int column_;
};

struct Expr {
  enum class Kind { kLayout, kCall };
  Kind kind = Kind::kLayout;
  Layout layout;            // kLayout; also read as an integer when it is a bare integer
  bool bare_integer = false;  // written as a plain integer such as 24 (no ':', no parentheses)
  std::string name;         // kCall: composition, complement, logical_divide, ...
  std::vector<Expr> args;   // kCall
  int column = 1;           // where the expression starts in the input
  std::string text;         // the source text of the expression
};

// The operations an expression may call, with their argument counts.
struct Operation {
  const char* name;
  int arity;
  const char* usage;
};
const std::vector<Operation>& operations();

Layout parse_layout(std::string_view text);
Expr parse_expression(std::string_view text);

}  // namespace hopattn::layout
