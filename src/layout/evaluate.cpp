#include "evaluate.hpp"

#include <utility>

namespace hopattn::layout {

namespace {

Outcome apply(const std::string& name, const std::vector<Layout>& operands, Int m) {
  const Layout& a = operands[0];
  if (name == "composition") return compose(a, operands[1]);
  if (name == "complement") return complement(a, m);
  if (name == "logical_divide") return logical_divide(a, operands[1]);
  if (name == "logical_product") return logical_product(a, operands[1]);
  if (name == "left_inverse") return left_inverse(a);
  Outcome out;
  if (name == "coalesce") out.result = coalesce(a);
  if (name == "sort") out.result = sort_layout(a);
  if (name == "right_inverse") out.result = right_inverse(a);
  if (!out.result) throw LayoutError("no evaluation rule for " + name);
  return out;
}

}  // namespace

Evaluation evaluate_expression(const Expr& expr) {
  Evaluation eval;
  eval.text = expr.text;
  eval.column = expr.column;
  if (expr.kind == Expr::Kind::kLayout) {
    eval.operation = "layout";
    eval.operands = {expr.layout};
    eval.outcome.result = expr.layout;
    return eval;
  }
  eval.operation = expr.name;
  for (std::size_t k = 0; k < expr.args.size(); ++k) {
    const Expr& arg = expr.args[k];
    if (expr.name == "complement" && k == 1) {
      if (!arg.bare_integer) {
        throw ParseError("the M of complement(A, M) must be a positive integer", arg.column);
      }
      eval.m = arg.layout.modes()[0].shape;
      continue;
    }
    Evaluation inner = evaluate_expression(arg);
    if (!inner.outcome.verdict.holds) {
      inner.whole = false;
      return inner;
    }
    eval.operands.push_back(*inner.outcome.result);
  }
  eval.outcome = apply(expr.name, eval.operands, eval.m);
  return eval;
}

}  // namespace hopattn::layout
