#include "rules/profiler_rules.h"

#include "rules/catalog.h"

namespace trainwatch::rules {

std::vector<RuleInfo> ProfilerRuleInfos() { return {}; }

}  // namespace trainwatch::rules
