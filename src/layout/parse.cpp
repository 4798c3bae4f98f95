#include "parse.hpp"

#include <cctype>
#include <utility>

namespace hopattn::layout {

namespace {

constexpr Int kMaxLiteral = (Int{1} << 31) - 1;
// Limits that keep parsing and evaluation bounded (stack, time, memory) on any input: the
// expression's length, and how deep tuples, calls and operator chains may nest (an operator
// chain A o B o C ... nests one level per operator: the evaluator recurses through it).
constexpr std::size_t kMaxInputBytes = 16384;
constexpr int kMaxDepth = 256;
constexpr std::string_view kCircle = "\xE2\x88\x98";  // U+2218 RING OPERATOR

// A tuple as parsed: its leaves and its nesting profile (see Layout).
struct Tuple {
  std::vector<Int> leaves;
  std::vector<int> columns;  // column of each leaf, for error messages
  std::string profile;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {
    if (text_.size() > kMaxInputBytes)
      throw ParseError("the expression is " + std::to_string(text_.size()) + " bytes long; the limit is " +
                           std::to_string(kMaxInputBytes),
                       1);
  }

  Layout whole_layout() {
    skip_space();
    Expr expr = layout_operand();
    expect_end();
    return expr.layout;
  }

  Expr whole_expression() {
    skip_space();
    if (at_end()) throw error("empty expression: expected a layout such as (6,2):(1,7)");
    Expr expr = expression();
    expect_end();
    return expr;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;

  // One more level of nesting (a tuple, a call's arguments, an operator of a chain).
  class Nest {
   public:
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth)
        throw p_.error("nested more than " + std::to_string(kMaxDepth) +
                       " levels deep (tuples, calls and operator chains count)");
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  int column() const { return static_cast<int>(pos_) + 1; }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  ParseError error(const std::string& message) const { return ParseError(message, column()); }
  ParseError error_at(const std::string& message, int col) const { return ParseError(message, col); }

  std::string describe_here() const {
    if (at_end()) return "the end of the expression";
    return "'" + std::string(1, peek()) + "'";
  }

  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) ++pos_;
  }

  void expect(char c, const std::string& context) {
    skip_space();
    if (peek() != c) {
      throw error("expected '" + std::string(1, c) + "' " + context + ", found " + describe_here());
    }
    ++pos_;
  }

  void expect_end() {
    skip_space();
    if (!at_end()) {
      throw error("unexpected " + describe_here() +
                  " (operators are 'o', '/' and '*'; arguments are separated by ',')");
    }
  }

  static bool is_identifier_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  }

  bool starts_integer() const {
    if (std::isdigit(static_cast<unsigned char>(peek()))) return true;
    return peek() == '_' && pos_ + 1 < text_.size() &&
           std::isdigit(static_cast<unsigned char>(text_[pos_ + 1]));
  }

  Int integer() {
    skip_space();
    if (peek() == '-') throw error("negative values are not supported");
    if (!starts_integer()) throw error("expected an integer, found " + describe_here());
    if (peek() == '_') ++pos_;  // CuTe prints static integers as _8
    Int value = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      value = value * 10 + (peek() - '0');
      if (value > kMaxLiteral) throw error("integer too large (the limit is 2^31 - 1)");
      ++pos_;
    }
    return value;
  }

  void tuple_into(Tuple& out) {
    skip_space();
    if (peek() != '(') {
      out.columns.push_back(column());
      out.leaves.push_back(integer());
      out.profile += '.';
      return;
    }
    ++pos_;
    Nest nest(*this);
    out.profile += '(';
    tuple_into(out);
    for (skip_space(); peek() == ','; skip_space()) {
      ++pos_;
      tuple_into(out);
    }
    if (peek() != ')') throw error("expected ',' or ')' in a tuple, found " + describe_here());
    ++pos_;
    out.profile += ')';
  }

  // A layout operand; a bare integer is remembered as such (it may be the M of complement).
  Expr layout_operand() {
    Expr expr;
    expr.column = column();
    const std::size_t start = pos_;
    Tuple shape;
    tuple_into(shape);
    for (std::size_t k = 0; k < shape.leaves.size(); ++k) {
      if (shape.leaves[k] < 1) {
        throw error_at("shape entries must be positive, found " + std::to_string(shape.leaves[k]),
                       shape.columns[k]);
      }
    }
    std::vector<Mode> modes(shape.leaves.size());
    skip_space();
    if (peek() == ':') {
      ++pos_;
      skip_space();
      const int stride_column = column();
      Tuple stride;
      tuple_into(stride);
      if (stride.profile != shape.profile) {
        throw error_at("the stride does not have the same nesting as the shape", stride_column);
      }
      for (std::size_t k = 0; k < modes.size(); ++k) modes[k] = Mode{shape.leaves[k], stride.leaves[k]};
    } else {
      // CuTe's default for a bare shape: column-major compact strides.
      Int weight = 1;
      for (std::size_t k = 0; k < modes.size(); ++k) {
        modes[k] = Mode{shape.leaves[k], weight};
        weight = checked_mul(weight, shape.leaves[k]);
      }
      expr.bare_integer = shape.profile == ".";
    }
    expr.layout = Layout(std::move(modes), std::move(shape.profile));
    expr.text = std::string(text_.substr(start, pos_ - start));
    return expr;
  }

  std::string identifier() {
    const std::size_t start = pos_;
    while (is_identifier_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  Expr call() {
    Expr expr;
    expr.kind = Expr::Kind::kCall;
    expr.column = column();
    const std::size_t start = pos_;
    expr.name = identifier();
    const Operation* op = nullptr;
    for (const Operation& candidate : operations()) {
      if (expr.name == candidate.name) op = &candidate;
    }
    if (op == nullptr) {
      std::string known;
      for (const Operation& candidate : operations()) known += std::string(" ") + candidate.name;
      throw error_at("unknown operation '" + expr.name + "'; known:" + known, expr.column);
    }
    expect('(', "after " + expr.name);
    Nest nest(*this);
    expr.args.push_back(expression());
    for (skip_space(); peek() == ','; skip_space()) {
      ++pos_;
      expr.args.push_back(expression());
    }
    expect(')', "to close the arguments of " + expr.name);
    if (static_cast<int>(expr.args.size()) != op->arity) {
      throw error_at(expr.name + " takes " + std::to_string(op->arity) + " argument" +
                         (op->arity == 1 ? "" : "s") + ": " + op->usage,
                     expr.column);
    }
    expr.text = std::string(text_.substr(start, pos_ - start));
    return expr;
  }

  Expr operand() {
    skip_space();
    if (peek() == '(' || starts_integer()) return layout_operand();
    if (std::isalpha(static_cast<unsigned char>(peek()))) return call();
    throw error("expected a layout such as (6,2):(1,7) or an operation, found " + describe_here());
  }

  // The binary operator at the current position, if any: returns the operation name.
  const char* binary_operator() {
    skip_space();
    if (peek() == '/') return ++pos_, "logical_divide";
    if (peek() == '*') return ++pos_, "logical_product";
    if (text_.substr(pos_, kCircle.size()) == kCircle) return pos_ += kCircle.size(), "composition";
    if (peek() == 'o' && !is_identifier_char(pos_ + 1 < text_.size() ? text_[pos_ + 1] : ' ')) {
      return ++pos_, "composition";
    }
    return nullptr;
  }

  Expr expression() {
    skip_space();
    const std::size_t start = pos_;
    Expr lhs = operand();
    int chain = 0;  // each operator nests the expression so far one level deeper
    while (const char* name = binary_operator()) {
      ++chain;
      if (++depth_ > kMaxDepth)
        throw error("nested more than " + std::to_string(kMaxDepth) +
                    " levels deep (tuples, calls and operator chains count)");
      Expr rhs = operand();
      Expr combined;
      combined.kind = Expr::Kind::kCall;
      combined.name = name;
      combined.column = lhs.column;
      combined.args = {std::move(lhs), std::move(rhs)};
      combined.text = std::string(text_.substr(start, pos_ - start));
      lhs = std::move(combined);
    }
    depth_ -= chain;
    return lhs;
  }
};

}  // namespace

const std::vector<Operation>& operations() {
  static const std::vector<Operation> kOperations = {
      {"composition", 2, "composition(A, B), also A o B"},
      {"complement", 2, "complement(A, M) with M a positive integer"},
      {"logical_divide", 2, "logical_divide(A, B), also A / B"},
      {"logical_product", 2, "logical_product(A, B), also A * B"},
      {"coalesce", 1, "coalesce(A)"},
      {"sort", 1, "sort(A)"},
      {"left_inverse", 1, "left_inverse(A)"},
      {"right_inverse", 1, "right_inverse(A)"},
  };
  return kOperations;
}

Layout parse_layout(std::string_view text) { return Parser(text).whole_layout(); }

Expr parse_expression(std::string_view text) { return Parser(text).whole_expression(); }

}  // namespace hopattn::layout
