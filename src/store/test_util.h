#pragma once
// Test helpers for the store's tests (not linked into the product).

#include "util/testing/temp_dir.h"

namespace trainwatch::store::testing {

using util::testing::TempDir;  // util/testing/temp_dir.h

}  // namespace trainwatch::store::testing
