// The metric math parser (query/metric_math.h has the grammar).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "query/metric_math_tree.h"

namespace trainwatch::query::internal {

absl::Status MathError(std::string_view what, size_t column) {
  return absl::InvalidArgumentError(absl::StrFormat("%s (column %d)", what, column + 1));
}

namespace {

// CloudWatch's metric math functions that trainwatch does not evaluate.
constexpr std::string_view kUnsupported[] = {
    "ANOMALY_DETECTION_BAND", "CEIL", "DATAPOINT_COUNT", "DB_PERF_INSIGHTS", "EXP", "FIRST",
    "FLOOR", "INSIGHT_RULE_METRIC", "LAST", "LOG", "LOG10", "MAX_VALUE", "MIN_VALUE", "PERIOD",
    "RUNNING_SUM", "SEARCH", "SERVICE_QUOTA", "SLICE", "SORT", "SQRT", "STDDEV_POP",
    "TEMPLATE_REPLACE", "TIME_SERIES", "LAMBDA", "CONCAT", "CONTAINS", "MAX_ALL"};

constexpr std::string_view kFunctions[] = {"METRICS", "SUM",  "AVG",  "MIN",       "MAX",
                                           "STDDEV",  "ABS",  "RATE", "DIFF",      "DIFF_TIME",
                                           "FILL",    "IF"};

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  absl::StatusOr<MathNode> Run(std::vector<std::string>* references, bool* uses_metrics) {
    references_ = references;
    uses_metrics_ = uses_metrics;
    absl::StatusOr<MathNode> root = Or();
    if (!root.ok()) return root;
    Skip();
    if (i_ < s_.size()) return MathError(absl::StrFormat("unexpected '%c'", s_[i_]), i_);
    return root;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(std::string_view token) {
    Skip();
    if (s_.substr(i_, token.size()) != token) return false;
    // A keyword must not run into a following identifier (ORDER is not OR).
    if (std::isalpha(static_cast<unsigned char>(token[0])) && i_ + token.size() < s_.size() &&
        (std::isalnum(static_cast<unsigned char>(s_[i_ + token.size()])) ||
         s_[i_ + token.size()] == '_')) {
      return false;
    }
    i_ += token.size();
    return true;
  }
  MathNode Binary(std::string op, MathNode a, MathNode b, size_t column) {
    MathNode n;
    n.kind = MathNode::kBinary;
    n.text = std::move(op);
    n.column = column;
    n.args.push_back(std::move(a));
    n.args.push_back(std::move(b));
    return n;
  }

  absl::StatusOr<MathNode> Or() {
    absl::StatusOr<MathNode> a = And();
    while (a.ok()) {
      size_t at = i_;
      if (!Eat("OR")) break;
      absl::StatusOr<MathNode> b = And();
      if (!b.ok()) return b;
      a = Binary("OR", *std::move(a), *std::move(b), at);
    }
    return a;
  }
  absl::StatusOr<MathNode> And() {
    absl::StatusOr<MathNode> a = Not();
    while (a.ok()) {
      size_t at = i_;
      if (!Eat("AND")) break;
      absl::StatusOr<MathNode> b = Not();
      if (!b.ok()) return b;
      a = Binary("AND", *std::move(a), *std::move(b), at);
    }
    return a;
  }
  absl::StatusOr<MathNode> Not() {
    size_t at = i_;
    if (Eat("NOT")) {
      if (++depth_ > 100) return MathError("the expression is nested too deep", i_);
      absl::StatusOr<MathNode> a = Not();
      --depth_;
      if (!a.ok()) return a;
      MathNode n;
      n.kind = MathNode::kUnary;
      n.text = "NOT";
      n.column = at;
      n.args.push_back(*std::move(a));
      return n;
    }
    return Compare();
  }
  absl::StatusOr<MathNode> Compare() {
    absl::StatusOr<MathNode> a = Add();
    if (!a.ok()) return a;
    for (std::string_view op : {">=", "<=", "==", "!=", ">", "<"}) {
      size_t at = i_;
      if (Eat(op)) {
        absl::StatusOr<MathNode> b = Add();
        if (!b.ok()) return b;
        return Binary(std::string(op), *std::move(a), *std::move(b), at);
      }
    }
    return a;
  }
  absl::StatusOr<MathNode> Add() {
    absl::StatusOr<MathNode> a = Mul();
    while (a.ok()) {
      size_t at = i_;
      std::string op = Eat("+") ? "+" : Eat("-") ? "-" : "";
      if (op.empty()) break;
      absl::StatusOr<MathNode> b = Mul();
      if (!b.ok()) return b;
      a = Binary(op, *std::move(a), *std::move(b), at);
    }
    return a;
  }
  absl::StatusOr<MathNode> Mul() {
    absl::StatusOr<MathNode> a = Pow();
    while (a.ok()) {
      size_t at = i_;
      std::string op = Eat("*") ? "*" : Eat("/") ? "/" : "";
      if (op.empty()) break;
      absl::StatusOr<MathNode> b = Pow();
      if (!b.ok()) return b;
      a = Binary(op, *std::move(a), *std::move(b), at);
    }
    return a;
  }
  absl::StatusOr<MathNode> Pow() {
    absl::StatusOr<MathNode> a = Unary();
    size_t at = i_;
    if (a.ok() && Eat("^")) {
      if (++depth_ > 100) return MathError("the expression is nested too deep", i_);
      absl::StatusOr<MathNode> b = Pow();  // right-associative
      --depth_;
      if (!b.ok()) return b;
      return Binary("^", *std::move(a), *std::move(b), at);
    }
    return a;
  }
  absl::StatusOr<MathNode> Unary() {
    size_t at = i_;
    if (Eat("-")) {
      if (++depth_ > 100) return MathError("the expression is nested too deep", i_);
      absl::StatusOr<MathNode> a = Unary();
      --depth_;
      if (!a.ok()) return a;
      MathNode n;
      n.kind = MathNode::kUnary;
      n.text = "-";
      n.column = at;
      n.args.push_back(*std::move(a));
      return n;
    }
    return Primary();
  }

  absl::StatusOr<MathNode> Primary() {
    Skip();
    MathNode n;
    n.column = i_;
    if (i_ >= s_.size()) return MathError("the expression ends where a value is expected", i_);
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      if (++depth_ > 100) return MathError("the expression is nested too deep", i_);
      absl::StatusOr<MathNode> inner = Or();
      --depth_;
      if (!inner.ok()) return inner;
      if (!Eat(")")) return MathError("')' expected", i_);
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      const char* begin = s_.data() + i_;
      std::string number;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                                ((s_[i_] == 'e' || s_[i_] == 'E') && i_ + 1 < s_.size()) ||
                                ((s_[i_] == '+' || s_[i_] == '-') && !number.empty() &&
                                 (number.back() == 'e' || number.back() == 'E')))) {
        number.push_back(s_[i_++]);
      }
      char* end = nullptr;
      n.number = std::strtod(number.c_str(), &end);
      if (end != number.c_str() + number.size() || !std::isfinite(n.number)) {
        return MathError(absl::StrFormat("\"%s\" is not a number", number), begin - s_.data());
      }
      n.kind = MathNode::kNumber;
      return n;
    }
    if (c == '"') {
      size_t end = s_.find('"', i_ + 1);
      if (end == std::string_view::npos) return MathError("a string is not closed", i_);
      n.kind = MathNode::kString;
      n.text = std::string(s_.substr(i_ + 1, end - i_ - 1));
      i_ = end + 1;
      return n;
    }
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      return MathError(absl::StrFormat("unexpected '%c'", c), i_);
    }
    std::string word;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) {
      word.push_back(s_[i_++]);
    }
    Skip();
    if (i_ < s_.size() && s_[i_] == '(') {
      ++i_;
      n.kind = MathNode::kCall;
      n.text = absl::AsciiStrToUpper(word);
      if (std::find(std::begin(kUnsupported), std::end(kUnsupported), n.text) !=
          std::end(kUnsupported)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "the function %s is not supported by trainwatch (it evaluates %s)", n.text,
            "METRICS, SUM, AVG, MIN, MAX, STDDEV, ABS, RATE, DIFF, DIFF_TIME, FILL and IF"));
      }
      if (std::find(std::begin(kFunctions), std::end(kFunctions), n.text) ==
          std::end(kFunctions)) {
        return MathError(absl::StrFormat("unknown function %s", word), n.column);
      }
      if (n.text == "METRICS") *uses_metrics_ = true;
      if (!Eat(")")) {
        while (true) {
          if (++depth_ > 100) return MathError("the expression is nested too deep", i_);
          absl::StatusOr<MathNode> arg = Or();
          --depth_;
          if (!arg.ok()) return arg;
          n.args.push_back(*std::move(arg));
          if (Eat(")")) break;
          if (!Eat(",")) return MathError("',' or ')' expected", i_);
        }
      }
      return n;
    }
    const std::string upper = absl::AsciiStrToUpper(word);
    if (upper == "REPEAT" || upper == "LINEAR") {
      n.kind = MathNode::kWord;
      n.text = upper;
      return n;
    }
    if (!std::islower(static_cast<unsigned char>(word[0]))) {
      return MathError(absl::StrFormat("\"%s\" is neither a query Id (they start with a lower-case "
                                   "letter) nor a function",
                                   word),
                   n.column);
    }
    n.kind = MathNode::kId;
    n.text = word;
    if (std::find(references_->begin(), references_->end(), word) == references_->end()) {
      references_->push_back(word);
    }
    return n;
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
  std::vector<std::string>* references_ = nullptr;
  bool* uses_metrics_ = nullptr;
};


}  // namespace

absl::StatusOr<MathNode> ParseMath(std::string_view text, std::vector<std::string>* references,
                                   bool* uses_metrics) {
  return Parser(text).Run(references, uses_metrics);
}

}  // namespace trainwatch::query::internal
