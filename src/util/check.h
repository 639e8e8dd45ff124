#pragma once
// TW_CHECK: an always-on invariant check. For invariants only: never for input,
// files or OS results (those return absl::Status).

#include <cstdio>
#include <cstdlib>

#define TW_CHECK(cond)                                                             \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, \
                   #cond);                                                         \
      std::abort();                                                                \
    }                                                                              \
  } while (0)
