#include "rules/profiler_rules.h"

#include <gtest/gtest.h>

namespace trainwatch::rules {
namespace {}  // namespace
}  // namespace trainwatch::rules
