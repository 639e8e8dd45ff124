#pragma once
// What agent_codec.cc (agents' batches) shares of the samples decoder in
// samples_codec.cc: not part of the API.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "model/series.h"
#include "simdjson.h"

namespace trainwatch::api::samples_internal {

// Parses `body` with this thread's parser (*top is valid until its next
// body): InvalidArgument naming `shape` unless the body is a JSON object.
absl::Status ParseObject(std::string_view body, std::string_view shape,
                         simdjson::dom::object* top);
// The "series" member of a samples body into *batch, reusing its slots (see
// DecodeSamplesBodyInto); InvalidArgument naming the series and sample.
absl::Status SamplesFromDom(simdjson::dom::element series, size_t max_samples,
                            model::SampleBatch* batch);
// An integer that fits int64_t; false for any other value.
bool AsInt64(simdjson::dom::element e, int64_t* out);

}  // namespace trainwatch::api::samples_internal
