#pragma once
// Test helpers for the agent's tests (not linked into the product).

#include "util/testing/temp_dir.h"

namespace trainwatch::agent::testing {

using util::testing::TempDir;

}  // namespace trainwatch::agent::testing
