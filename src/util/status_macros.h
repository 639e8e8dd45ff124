#pragma once
// Status propagation macros (Debian 12's abseil has none).
//
//   TW_RETURN_IF_ERROR(DoThing());
//   TW_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(options));
//   TW_ASSIGN_OR_RETURN(auto rows, Query(...));

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TW_STATUS_CONCAT_INNER_(a, b) a##b
#define TW_STATUS_CONCAT_(a, b) TW_STATUS_CONCAT_INNER_(a, b)

#define TW_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::absl::Status tw_status_ = (expr);          \
    if (!tw_status_.ok()) return tw_status_;     \
  } while (0)

#define TW_ASSIGN_OR_RETURN(lhs, rexpr) \
  TW_ASSIGN_OR_RETURN_IMPL_(TW_STATUS_CONCAT_(tw_statusor_, __LINE__), lhs, rexpr)

#define TW_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()
