#include "query/metric_math.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "query/metric_math_tree.h"

namespace trainwatch::query {
namespace {

using internal::MathNode;

absl::Status Error(std::string_view what, size_t column) { return internal::MathError(what, column); }

// ---- evaluation ----------------------------------------------------------

bool IsSeries(const MathValue& v) { return !v.scalar.has_value(); }

MathValue Scalar(double x) {
  MathValue v;
  v.scalar = x;
  return v;
}

// Applies f point by point to one series.
template <typename F>
MathSeries Map(const MathSeries& s, F f) {
  MathSeries out;
  out.label = s.label;
  for (size_t i = 0; i < s.t_ms.size(); ++i) {
    double y = f(s.values[i]);
    if (!std::isfinite(y)) continue;
    out.t_ms.push_back(s.t_ms[i]);
    out.values.push_back(y);
  }
  return out;
}

// f over the timestamps both series have.
template <typename F>
MathSeries Zip(const MathSeries& a, const MathSeries& b, F f) {
  MathSeries out;
  out.label = a.label;
  size_t i = 0, j = 0;
  while (i < a.t_ms.size() && j < b.t_ms.size()) {
    if (a.t_ms[i] < b.t_ms[j]) {
      ++i;
    } else if (b.t_ms[j] < a.t_ms[i]) {
      ++j;
    } else {
      double y = f(a.values[i], b.values[j]);
      if (std::isfinite(y)) {
        out.t_ms.push_back(a.t_ms[i]);
        out.values.push_back(y);
      }
      ++i;
      ++j;
    }
  }
  return out;
}

double Apply(const std::string& op, double a, double b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return a / b;
  if (op == "^") return std::pow(a, b);
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "AND") return (a != 0) && (b != 0);
  return (a != 0) || (b != 0);  // OR
}

absl::StatusOr<MathValue> Combine(const std::string& op, const MathValue& a, const MathValue& b,
                                  size_t column) {
  // A value is a number, an array (any number of series) or exactly one
  // series; lookups of other queries give one series, maybe empty.
  if ((IsSeries(a) && !a.array && a.series.size() != 1) ||
      (IsSeries(b) && !b.array && b.series.size() != 1)) {
    return absl::InternalError("a series value without exactly one series");
  }
  if (!IsSeries(a) && !IsSeries(b)) {
    double y = Apply(op, *a.scalar, *b.scalar);
    if (!std::isfinite(y)) return Error("the result is not a finite number", column);
    return Scalar(y);
  }
  MathValue out;
  out.array = a.array || b.array;
  if (!IsSeries(b)) {
    for (const MathSeries& s : a.series) {
      out.series.push_back(Map(s, [&](double x) { return Apply(op, x, *b.scalar); }));
    }
  } else if (!IsSeries(a)) {
    for (const MathSeries& s : b.series) {
      out.series.push_back(Map(s, [&](double x) { return Apply(op, *a.scalar, x); }));
    }
  } else if (a.array && b.array) {
    return Error(absl::StrFormat("'%s' between two arrays of series (use one array and one "
                                 "series or number)",
                                 op),
                 column);
  } else if (a.array) {
    for (const MathSeries& s : a.series) {
      out.series.push_back(Zip(s, b.series[0], [&](double x, double y) { return Apply(op, x, y); }));
    }
  } else if (b.array) {
    for (const MathSeries& s : b.series) {
      out.series.push_back(Zip(s, a.series[0], [&](double y, double x) { return Apply(op, x, y); }));
    }
  } else {
    out.series.push_back(Zip(a.series[0], b.series[0], [&](double x, double y) {
      return Apply(op, x, y);
    }));
  }
  return out;
}

// SUM, AVG, MIN, MAX, STDDEV of a list of values.
double Aggregate(const std::string& f, const std::vector<double>& xs) {
  double sum = 0, lo = xs[0], hi = xs[0];
  for (double x : xs) {
    sum += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double mean = sum / static_cast<double>(xs.size());
  if (f == "SUM") return sum;
  if (f == "AVG") return mean;
  if (f == "MIN") return lo;
  if (f == "MAX") return hi;
  double ss = 0;  // STDDEV: the sample standard deviation, as CloudWatch's
  for (double x : xs) ss += (x - mean) * (x - mean);
  return xs.size() < 2 ? 0 : std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

class Evaluator {
 public:
  explicit Evaluator(const MathContext& c) : c_(c) {}

  absl::StatusOr<MathValue> Eval(const MathNode& n) {
    switch (n.kind) {
      case MathNode::kNumber: return Scalar(n.number);
      case MathNode::kString:
      case MathNode::kWord:
        return Error(absl::StrFormat("%s can only be an argument of %s", n.text,
                                     n.kind == MathNode::kString ? "METRICS" : "FILL"),
                     n.column);
      case MathNode::kId: return c_.lookup(n.text);
      case MathNode::kUnary: {
        absl::StatusOr<MathValue> a = Eval(n.args[0]);
        if (!a.ok()) return a;
        return Combine(n.text == "NOT" ? "==" : "*", *a, Scalar(n.text == "NOT" ? 0 : -1),
                       n.column);
      }
      case MathNode::kBinary: {
        absl::StatusOr<MathValue> a = Eval(n.args[0]);
        if (!a.ok()) return a;
        absl::StatusOr<MathValue> b = Eval(n.args[1]);
        if (!b.ok()) return b;
        return Combine(n.text, *a, *b, n.column);
      }
      case MathNode::kCall: return Call(n);
    }
    return absl::InternalError("unknown expression node");
  }

 private:
  absl::Status Arity(const MathNode& n, size_t lo, size_t hi) {
    if (n.args.size() >= lo && n.args.size() <= hi) return absl::OkStatus();
    return Error(lo == hi ? absl::StrFormat("%s takes %d argument%s", n.text, lo, lo == 1 ? "" : "s")
                          : absl::StrFormat("%s takes %d to %d arguments", n.text, lo, hi),
                 n.column);
  }

  absl::StatusOr<MathValue> Series(const MathNode& n, const MathNode& arg) {
    absl::StatusOr<MathValue> v = Eval(arg);
    if (v.ok() && !IsSeries(*v)) {
      return Error(absl::StrFormat("%s needs a time series, not a number", n.text), arg.column);
    }
    return v;
  }

  absl::StatusOr<MathValue> Call(const MathNode& n) {
    const std::string& f = n.text;
    if (f == "METRICS") {
      if (absl::Status s = Arity(n, 0, 1); !s.ok()) return s;
      if (n.args.size() == 1 && n.args[0].kind != MathNode::kString) {
        return Error("METRICS takes a \"quoted\" label text", n.args[0].column);
      }
      MathValue out;
      out.array = true;
      for (MathSeries& s : c_.metrics()) {
        if (n.args.empty() || s.label.find(n.args[0].text) != std::string::npos) {
          out.series.push_back(std::move(s));
        }
      }
      return out;
    }
    if (f == "SUM" || f == "AVG" || f == "MIN" || f == "MAX" || f == "STDDEV") {
      if (absl::Status s = Arity(n, 1, 1); !s.ok()) return s;
      absl::StatusOr<MathValue> v = Series(n, n.args[0]);
      if (!v.ok()) return v;
      if (!v->array) {  // one series: one number
        const MathSeries& s = v->series[0];
        if (s.values.empty()) {  // no data: an empty series, not a number
          MathValue empty;
          empty.series.push_back(MathSeries{s.label, {}, {}});
          return empty;
        }
        return Scalar(Aggregate(f, s.values));
      }
      // An array: one series, point by point over the series that have one.
      std::vector<std::pair<int64_t, double>> points;
      for (const MathSeries& s : v->series) {
        for (size_t i = 0; i < s.t_ms.size(); ++i) points.emplace_back(s.t_ms[i], s.values[i]);
      }
      std::stable_sort(points.begin(), points.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      MathValue out;
      out.series.emplace_back();
      std::vector<double> at;
      for (size_t i = 0; i < points.size(); ++i) {
        at.push_back(points[i].second);
        if (i + 1 == points.size() || points[i + 1].first != points[i].first) {
          double y = Aggregate(f, at);
          if (std::isfinite(y)) {
            out.series[0].t_ms.push_back(points[i].first);
            out.series[0].values.push_back(y);
          }
          at.clear();
        }
      }
      return out;
    }
    if (f == "ABS" || f == "RATE" || f == "DIFF" || f == "DIFF_TIME") {
      if (absl::Status s = Arity(n, 1, 1); !s.ok()) return s;
      absl::StatusOr<MathValue> v = Eval(n.args[0]);
      if (!v.ok()) return v;
      if (!IsSeries(*v)) {
        if (f == "ABS") return Scalar(std::fabs(*v->scalar));
        return Error(absl::StrFormat("%s needs a time series, not a number", f), n.args[0].column);
      }
      for (MathSeries& s : v->series) {
        if (f == "ABS") {
          s = Map(s, [](double x) { return std::fabs(x); });
          continue;
        }
        MathSeries d;
        d.label = s.label;
        for (size_t i = 1; i < s.t_ms.size(); ++i) {
          const double dt = static_cast<double>(s.t_ms[i] - s.t_ms[i - 1]) / 1000.0;
          const double dv = s.values[i] - s.values[i - 1];
          const double y = f == "DIFF" ? dv : f == "DIFF_TIME" ? dt : dv / dt;
          if (!std::isfinite(y)) continue;
          d.t_ms.push_back(s.t_ms[i]);
          d.values.push_back(y);
        }
        s = std::move(d);
      }
      return v;
    }
    if (f == "FILL") {
      if (absl::Status s = Arity(n, 2, 2); !s.ok()) return s;
      absl::StatusOr<MathValue> v = Series(n, n.args[0]);
      if (!v.ok()) return v;
      std::optional<double> with;
      std::string how;
      if (n.args[1].kind == MathNode::kWord) {
        how = n.args[1].text;
      } else {
        absl::StatusOr<MathValue> w = Eval(n.args[1]);
        if (!w.ok()) return w;
        if (IsSeries(*w)) {
          return Error("FILL's second argument is a number, REPEAT or LINEAR", n.args[1].column);
        }
        with = w->scalar;
      }
      for (MathSeries& s : v->series) s = Fill(s, with, how);
      return v;
    }
    // IF(condition, a [, b])
    if (absl::Status s = Arity(n, 2, 3); !s.ok()) return s;
    std::vector<MathValue> args;
    for (const MathNode& a : n.args) {
      absl::StatusOr<MathValue> v = Eval(a);
      if (!v.ok()) return v;
      args.push_back(*std::move(v));
    }
    if (!IsSeries(args[0])) {
      return Error("IF's condition must be a time series (e.g. m1 > 10)", n.args[0].column);
    }
    if (args[0].array) return Error("IF's condition must be one time series", n.args[0].column);
    for (const MathValue& v : args) {
      if (IsSeries(v) && !v.array && v.series.size() != 1) {
        return absl::InternalError("a series value without exactly one series");
      }
    }
    const MathSeries& cond = args[0].series[0];
    auto value_at = [&](const MathValue& v, int64_t t) -> std::optional<double> {
      if (!IsSeries(v)) return v.scalar;
      const MathSeries& s = v.series[0];
      auto it = std::lower_bound(s.t_ms.begin(), s.t_ms.end(), t);
      if (it == s.t_ms.end() || *it != t) return std::nullopt;
      return s.values[it - s.t_ms.begin()];
    };
    for (size_t k = 1; k < args.size(); ++k) {
      if (args[k].array) return Error("IF's values must be single series or numbers", n.column);
    }
    MathValue out;
    out.series.emplace_back();
    out.series[0].label = IsSeries(args[1]) ? args[1].series[0].label : cond.label;
    for (size_t i = 0; i < cond.t_ms.size(); ++i) {
      std::optional<double> y =
          cond.values[i] != 0 ? value_at(args[1], cond.t_ms[i])
                              : args.size() == 3 ? value_at(args[2], cond.t_ms[i]) : std::nullopt;
      if (!y || !std::isfinite(*y)) continue;
      out.series[0].t_ms.push_back(cond.t_ms[i]);
      out.series[0].values.push_back(*y);
    }
    return out;
  }

  MathSeries Fill(const MathSeries& s, std::optional<double> with, const std::string& how) {
    MathSeries out;
    out.label = s.label;
    if (c_.period_ms <= 0) return s;
    size_t j = 0;
    for (int64_t t = c_.start_ms; t < c_.end_ms; t += c_.period_ms) {
      while (j < s.t_ms.size() && s.t_ms[j] < t) ++j;
      std::optional<double> y;
      if (j < s.t_ms.size() && s.t_ms[j] == t) {
        y = s.values[j];
      } else if (with) {
        y = with;
      } else if (!s.t_ms.empty()) {
        const bool before = j > 0, after = j < s.t_ms.size();
        if (how == "REPEAT") {
          y = before ? s.values[j - 1] : s.values[j];
        } else if (before && after) {  // LINEAR
          const double f = static_cast<double>(t - s.t_ms[j - 1]) /
                           static_cast<double>(s.t_ms[j] - s.t_ms[j - 1]);
          y = s.values[j - 1] + f * (s.values[j] - s.values[j - 1]);
        } else {
          y = before ? s.values[j - 1] : s.values[j];
        }
      }
      if (!y) continue;
      out.t_ms.push_back(t);
      out.values.push_back(*y);
    }
    return out;
  }

  const MathContext& c_;
};

}  // namespace

MetricMath::MetricMath(MetricMath&&) noexcept = default;
MetricMath& MetricMath::operator=(MetricMath&&) noexcept = default;
MetricMath::~MetricMath() = default;

absl::StatusOr<MetricMath> MetricMath::Parse(std::string_view expression) {
  MetricMath out;
  absl::StatusOr<MathNode> root =
      internal::ParseMath(expression, &out.references_, &out.uses_metrics_);
  if (!root.ok()) return root.status();
  out.root_ = std::make_shared<const MathNode>(*std::move(root));
  return out;
}

absl::StatusOr<MathValue> MetricMath::Evaluate(const MathContext& context) const {
  return Evaluator(context).Eval(*root_);
}

}  // namespace trainwatch::query
