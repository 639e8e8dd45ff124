#pragma once
// Rule parameters: what each rule accepts (ParamSpec), and the user's strings
// ("threshold" -> "50", from `--rule`, a RuleConfigurations file or
// CreateTrainingJob, where every value is a string) parsed and checked against
// it. Every error names the rule, the parameter and what is accepted, so a bad
// configuration stops a run before it starts instead of failing later.
//
//   static constexpr ParamSpec kSpecs[] = {
//       {"threshold", ParamType::kNumber, "50", "", 0, 100, "percent of ..."}};
//   absl::StatusOr<ParamValues> v = ParseParams("CPUBottleneck", kSpecs, given, profile);
//   double threshold = v->Number("threshold");

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace trainwatch::rules {

// kDefault: trainwatch's defaults (windows and patience in seconds, robust
// statistics). kSageMakerCompat: the defaults SageMaker shipped (spec/rules.md
// §7.2), counted as SageMaker counted them, and a rule stops at its first issue.
enum class Profile : uint8_t { kDefault, kSageMakerCompat };
std::string_view ProfileName(Profile profile);  // "default", "sagemaker_compat"

enum class ParamType : uint8_t {
  kNumber,   // a finite decimal number
  kInteger,  // a whole number
  kBool,     // true/false (any case), as SageMaker's "True"/"False"
  kString,   // any text (a metric name, a regex)
  kSeconds,  // a duration as util::ParseDurationMs reads it ("90", "90s", "15m"); in seconds
  kRegex,    // a regular expression (ECMAScript, as std::regex), checked; read with String()
};
std::string_view ParamTypeName(ParamType type);

struct ParamSpec {
  std::string_view name;
  ParamType type;
  std::string_view default_value;  // as a user would write it; "" = no value (optional)
  std::string_view compat_value;   // for kSageMakerCompat; "" = the default
  double min = -std::numeric_limits<double>::infinity();  // inclusive, numbers and seconds
  double max = std::numeric_limits<double>::infinity();
  std::string_view help;
};

class ParamValues {
 public:
  // Accessors for a parameter declared in the spec with that type (a
  // programming error otherwise: checked).
  double Number(std::string_view name) const;
  int64_t Integer(std::string_view name) const;
  bool Bool(std::string_view name) const;
  const std::string& String(std::string_view name) const;
  double Seconds(std::string_view name) const;
  // Whether the parameter has a value (optional ones may not).
  bool Has(std::string_view name) const;
  Profile profile() const { return profile_; }
  // "name=value" per parameter, in spec order (what the rule ran with).
  std::vector<std::string> Describe() const;

 private:
  friend absl::StatusOr<ParamValues> ParseParams(std::string_view, std::span<const ParamSpec>,
                                                 const std::map<std::string, std::string>&,
                                                 Profile);
  struct Value {
    ParamType type;
    bool has = false;
    double number = 0;
    bool flag = false;
    std::string text;
  };
  const Value& Get(std::string_view name, ParamType type) const;
  std::vector<std::pair<std::string, Value>> values_;
  Profile profile_ = Profile::kDefault;
};

// Checks `given` (parameter names compare exactly; SageMaker's are snake_case)
// against `specs` and fills in defaults for `profile`. InvalidArgument:
// - unknown parameter: `rule CPUBottleneck has no parameter "treshold"; did you
//   mean "threshold"? Its parameters: threshold, gpu_threshold, ...` (nearest first);
// - bad value: `rule CPUBottleneck: threshold="abc" is not a number; give a
//   number from 0 to 100 (default 50)`.
absl::StatusOr<ParamValues> ParseParams(std::string_view rule, std::span<const ParamSpec> specs,
                                        const std::map<std::string, std::string>& given,
                                        Profile profile);

// The candidates that start with `word` (ignoring case), then the others, each
// ordered by edit distance to `word` (closest first; ties keep their order).
// Used for "did you mean" in every rule-configuration error and for an
// unknown command.
std::vector<std::string> NearestFirst(std::string_view word,
                                      const std::vector<std::string>& candidates);

}  // namespace trainwatch::rules
