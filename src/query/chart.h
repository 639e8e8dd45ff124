#pragma once
// The chart read (MetricsReader::Chart, query/reader.h) over a read view of
// the store: every series of the query (each unit, or the one asked for),
// each part of the range from the finest tier that still covers it, one
// pass over the data (each chunk decoded once) into query/m4.h's M4.

#include "absl/status/statusor.h"
#include "query/reader.h"
#include "store/read_view.h"

namespace trainwatch::query {

absl::StatusOr<ChartAnswer> ChartFromView(const store::ReadView& view, const ChartQuery& query);

}  // namespace trainwatch::query
