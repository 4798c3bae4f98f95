#include "layout_command.hpp"

#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "evaluate.hpp"
#include "judge.hpp"
#include "oracle.hpp"
#include "table.hpp"

namespace hopattn::layout {

namespace {

using std::to_string;

constexpr const char* kUsage = R"(usage: hopattn layout [--check] EXPR

Evaluates a CuTe layout expression with the closed forms of J. Shah, "A note on the algebra
of CuTe Layouts", states whether the note's sufficient conditions hold (and which one fails,
and why), prints the result in CuTe notation with its value table (as cute::print_layout),
and cross-checks everything by brute force over the layout functions.

EXPR, in CuTe notation (quote it for the shell):
  (6,2):(1,7)                     a layout; nesting as in ((2,2),2):((4,1),2); "_8" reads as 8;
                                  a shape alone gets column-major compact strides
  A o B    composition(A, B)      composition (also U+2218); f^_A o f_B, A extended beyond its size
  A / B    logical_divide(A, B)   A o (B, complement(B, size(A)))
  A * B    logical_product(A, B)  (A, complement(A, size(A)*cosize(B)) o B)
  complement(A, M)                M a positive integer
  coalesce(A)  sort(A)  left_inverse(A)  right_inverse(A)
Binary operators apply left to right; use the function forms to nest.

options:
  --check   also evaluate CuTe's own result (CUTLASS 4.2, host code, run-time integers) and
            say whether it equals the true result as a function
  --help    this text

exit status:
  0  the note's conditions hold and the result is printed
  1  a condition fails; the failing condition is stated (the result is undefined by the note)
  2  malformed expression (the error points at the column), bad usage, or an input beyond
     the checker's limits
)";

constexpr int kExitHolds = 0;
constexpr int kExitFails = 1;
constexpr int kExitUsage = 2;

void line(std::ostream& out, const std::string& label, const std::string& text) {
  out << std::left << std::setw(13) << label << text << '\n';
}

std::string describe_operation(const std::string& op) {
  if (op == "composition") return "composition A o B (note, Definitions 2.12, 2.13, 2.17)";
  if (op == "complement") return "complement(A, M) (note, Definitions 2.5, 2.6)";
  if (op == "logical_divide") {
    return "logical division A / B = A o (B, complement(B, size(A))) (note, Definition 2.22)";
  }
  if (op == "logical_product") {
    return "logical product (A, complement(A, size(A)*cosize(B)) o B) (CuTe's documentation)";
  }
  if (op == "coalesce") return "coalesce(A): merge modes, keep the function on the domain";
  if (op == "sort") return "sort(A): modes by stride, then shape (note, Definition 2.4)";
  if (op == "left_inverse") return "left_inverse(A): L with L(A(x)) = x";
  if (op == "right_inverse") return "right_inverse(A): R with A(R(i)) = i";
  return "a layout";
}

void print_header(std::ostream& out, const std::string& input, const Evaluation& eval) {
  line(out, "expression", input);
  if (!eval.whole) line(out, "fails at", eval.text + " (column " + to_string(eval.column) + ")");
  line(out, "operation", describe_operation(eval.operation));
  const char* names[] = {"  A", "  B"};
  if (eval.operation == "layout") return;
  for (std::size_t k = 0; k < eval.operands.size() && k < 2; ++k) {
    line(out, names[k], eval.operands[k].str());
  }
  if (eval.operation == "complement") line(out, "  M", to_string(eval.m));
}

void print_verdict(std::ostream& out, const Verdict& verdict) {
  line(out, "conditions", verdict.holds ? "hold" : "FAIL");
  for (const std::string& s : verdict.steps) line(out, "  ok", s);
  for (const std::string& s : verdict.failures) line(out, "  FAILS", s);
}

void print_result(std::ostream& out, const Evaluation& eval) {
  if (!eval.outcome.result) {
    line(out, "result", "undefined: the note's conditions do not hold");
    return;
  }
  const Layout& result = *eval.outcome.result;
  line(out, "result", result.str());
  line(out, "size", to_string(result.size()) + ", cosize " + to_string(result.cosize()));
  const Layout simple = coalesce(result);
  if (simple != result.flattened()) line(out, "coalesced", simple.str());
  out << value_table(result);
}

std::string verdict_text(const Judgement& judgement) {
  std::string name = verdict_name(judgement.verdict);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name + ": " + judgement.detail;
}

bool is_identity(const std::vector<Int>& v) {
  for (std::size_t x = 0; x < v.size(); ++x) {
    if (v[x] != static_cast<Int>(x)) return false;
  }
  return true;
}

// Whether some layout compatible with `b` (called `name`) has the function f^_A o f_B, and for
// which strides of A.
std::string composition_existence(const Layout& a, const Layout& b, const std::string& name) {
  const Existence exists = composition_exists(a, b);
  if (!exists.exists) return exists.reason;
  const bool every = composition_exists(generic_strides(a, b), b, Explain::kNo).exists;
  return "yet a layout compatible with " + name + " has this function: " + exists.witness->str() +
         (every ? " (and one does for every choice of A's strides)" : " (only for these strides of A)") +
         "; the note's conditions are sufficient, not necessary";
}

void truth_composition(std::ostream& out, const Evaluation& eval) {
  const Layout& a = eval.operands[0];
  const Layout& b = eval.operands[1];
  const std::vector<Int> truth = composed_values(a, b);
  if (eval.outcome.result) {
    line(out, "brute force", same_function(*eval.outcome.result, truth)
                                 ? "the closed form equals f^_A o f_B on all " + to_string(truth.size()) + " points"
                                 : "MISMATCH: the closed form differs from f^_A o f_B");
    return;
  }
  line(out, "brute force", "f^_A o f_B over the domain of B, in B's shape:");
  out << value_table(b, truth);
  line(out, "", composition_existence(a, b, "B"));
}

void truth_complement(std::ostream& out, const Evaluation& eval) {
  const Layout& a = eval.operands[0];
  if (eval.outcome.result) {
    const auto violation = complement_violation(a, eval.m, *eval.outcome.result);
    line(out, "brute force", violation ? "MISMATCH: " + *violation
                                       : "(A, R) is a bijection onto [0, " + to_string(eval.m) +
                                             ") and R is increasing");
    return;
  }
  const Existence exists = complement_exists(a, eval.m);
  line(out, "brute force", exists.exists ? "yet a complement exists: " + exists.witness->str() +
                                               "; the note's conditions are sufficient, not necessary"
                                         : "no complement exists: " + exists.reason);
}

// A / B = A o (B, R) and A (x) B = (A, R o B), R the complement each needs.
void truth_divide_or_product(std::ostream& out, const Evaluation& eval) {
  const Layout& a = eval.operands[0];
  const Layout& b = eval.operands[1];
  const bool divide = eval.operation == "logical_divide";
  const TrueFunction truth = divide ? divide_function(a, b) : product_function(a, b);
  if (!truth.defined) {
    line(out, "brute force", "undefined: " + truth.reason);
    return;
  }
  if (eval.outcome.result) {
    line(out, "brute force", same_function(*eval.outcome.result, truth.values)
                                 ? "the closed form has the true function on all " + to_string(truth.values.size()) + " points"
                                 : "MISMATCH: the closed form differs from the true function");
    return;
  }
  if (divide) {
    const Layout divisor = Layout::tuple({b, *complement_exists(b, a.size()).witness});
    line(out, "brute force", "the true A / B is f^_A o f_D, D = (B, complement(B, size(A))) = " + divisor.str());
    line(out, "", composition_existence(a, divisor, "D"));
  } else {
    const Layout rest = *complement_exists(a, checked_mul(a.size(), b.cosize())).witness;
    line(out, "brute force", "the true product is (A, R o B), R = complement(A, size(A)*cosize(B)) = " + rest.str());
    line(out, "", composition_existence(rest, b, "B"));
  }
}

void truth_other(std::ostream& out, const Evaluation& eval) {
  const Layout& a = eval.operands[0];
  const std::optional<Layout>& result = eval.outcome.result;
  if (eval.operation == "coalesce") {
    line(out, "brute force", same_function(*result, values(a)) ? "same function as A on its domain"
                                                               : "MISMATCH: the function changed");
  } else if (eval.operation == "left_inverse" && result) {
    line(out, "brute force", is_identity(composed_values(*result, a)) ? "L(A(x)) = x for all x in [0, size(A))"
                                                                      : "MISMATCH: L o A is not the identity");
  } else if (eval.operation == "right_inverse") {
    line(out, "brute force", is_identity(composed_values(a, *result)) ? "A(R(i)) = i for all i in [0, size(R))"
                                                                      : "MISMATCH: A o R is not the identity");
  }
}

// Brute force: the truth about the operation, independent of the note's conditions.
void print_truth(std::ostream& out, const Evaluation& eval) {
  const std::string& op = eval.operation;
  if (op == "composition") return truth_composition(out, eval);
  if (op == "complement") return truth_complement(out, eval);
  if (op == "logical_divide" || op == "logical_product") return truth_divide_or_product(out, eval);
  truth_other(out, eval);
}

void print_cute(std::ostream& out, const Evaluation& eval) {
  const std::string& op = eval.operation;
  const Layout& a = eval.operands[0];
  CuteRun run;
  Judgement judgement;
  if (op == "composition") {
    run = cute_composition(a, eval.operands[1]);
    judgement = judge_composition(a, eval.operands[1], run);
  } else if (op == "complement") {
    run = cute_complement(a, eval.m);
    judgement = judge_complement(a, eval.m, run);
  } else if (op == "logical_divide") {
    run = cute_logical_divide(a, eval.operands[1]);
    judgement = judge_divide(a, eval.operands[1], run);
  } else if (op == "logical_product") {
    run = cute_logical_product(a, eval.operands[1]);
    judgement = judge_product(a, eval.operands[1], run);
  } else if (op == "coalesce") {
    run = cute_coalesce(a);
    judgement = judge_values(values(a), run, "A");
  } else {
    line(out, "cute", "not evaluated: --check covers composition, complement, logical_divide, "
                      "logical_product and coalesce");
    return;
  }
  line(out, "cute", run.evaluated() ? run.result.str() + "  (CUTLASS 4.2, run-time integers)"
                                    : "no layout");
  line(out, "cute verdict", verdict_text(judgement));
  if (op == "complement" && a.modes().size() == 2) {
    // The run-time path rejects this; CuTe can still evaluate it with static strides.
    const CuteRun fixed = cute_complement_static_strides(a, eval.m);
    line(out, "cute", fixed.evaluated() ? fixed.result.str() + "  (static strides, run-time shapes)" : fixed.note);
    if (fixed.evaluated()) line(out, "cute verdict", verdict_text(judge_complement(a, eval.m, fixed)));
  }
}

// Runs one report section; an input beyond the brute-force limits skips it with a note.
// Returns whether the section ran.
bool guarded(std::ostream& out, const char* label, const std::function<void()>& section) {
  try {
    section();
    return true;
  } catch (const LayoutError& e) {
    line(out, label, std::string("skipped: ") + e.what());
    return false;
  }
}

void print_parse_error(std::ostream& err, const std::string& input, const ParseError& e) {
  err << "hopattn layout: error: " << e.what() << '\n'
            << "  " << input << '\n'
            << "  " << std::string(static_cast<std::size_t>(e.column() - 1), ' ') << "^ column "
            << e.column() << '\n';
}

}  // namespace

int layout_report(const std::string& input, bool check, std::ostream& out, std::ostream& err) {
  Evaluation eval;
  try {
    eval = evaluate_expression(parse_expression(input));
  } catch (const ParseError& e) {
    print_parse_error(err, input, e);
    return kExitUsage;
  } catch (const LayoutError& e) {
    err << "hopattn layout: error: " << e.what() << '\n';
    return kExitUsage;
  }
  print_header(out, input, eval);
  if (eval.operation != "layout") print_verdict(out, eval.outcome.verdict);
  const bool result_printed = guarded(out, "result", [&] { print_result(out, eval); });
  guarded(out, "brute force", [&] { print_truth(out, eval); });
  if (check) guarded(out, "cute", [&] { print_cute(out, eval); });
  if (!result_printed) {  // e.g. the result's extents overflow: beyond the checker's limits
    err << "hopattn layout: error: the result cannot be computed within the checker's limits\n";
    return kExitUsage;
  }
  return eval.outcome.verdict.holds ? kExitHolds : kExitFails;
}

int run_layout_command(int argc, char** argv) {
  bool check = false;
  std::string input;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return kExitHolds;
    }
    if (arg == "--check") {
      check = true;
    } else if (arg.rfind("--", 0) == 0) {
      std::cerr << "hopattn layout: unknown option " << arg << "\n\n" << kUsage;
      return kExitUsage;
    } else {
      input += (input.empty() ? "" : " ") + arg;
    }
  }
  if (input.empty()) {
    std::cerr << "hopattn layout: missing expression\n\n" << kUsage;
    return kExitUsage;
  }
  return layout_report(input, check, std::cout, std::cerr);
}

}  // namespace hopattn::layout
