#pragma once
// Rules over the profiler's system metrics (spec/rules.md §6, with the fixes of
// §9.6/§10.3). Each is a Params/State pair and its OnInput/OnEnd (rules/rule.h);
// ProfilerRuleInfos() (rules/catalog.h) lists them.

#include "rules/params.h"
#include "rules/rule.h"

namespace trainwatch::rules {}  // namespace trainwatch::rules
