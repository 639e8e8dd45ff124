#pragma once
// The agents' wire format: POST /api/v1/agent/deliver carries one batch of a
// remote `trainwatch run` (samples, log events, or its job record) with the
// agent's name and the batch's number, so that a batch resent after a lost
// answer or a server restart is written once (store::Delivery).
//
//   {"agent": "gpu-3/4242/1f2e", "seq": 17, "kind": "samples",
//    "series": [ ...as POST /api/v1/samples... ]}
//   {"agent": ..., "seq": ..., "kind": "logs", "group": "...", "stream": "...",
//    "events": [{"t_ms": 1736942400123, "message": "..."}]}
//   {"agent": ..., "seq": ..., "kind": "create_job" | "update_job", "job": {JobRecordJson}}
//
// Both ends use these functions: the server (NativeApi) to decode, the agent
// (agent/remote_sink) to encode. docs/api.md documents the format.

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/native/agent_wire.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {

// Every field of a job record (what GET /api/v1/jobs/NAME answers): the wire
// form of model/job_record_json.h.
nlohmann::ordered_json JobRecordJson(const model::JobRecord& job);
// The inverse; InvalidArgument naming the field that is missing or mistyped.
absl::StatusOr<model::JobRecord> JobRecordFromJson(const nlohmann::json& j);

// {"series": [...]} as POST /api/v1/samples takes it.
nlohmann::ordered_json SamplesJson(const model::SampleBatch& batch);
// A body with a "series" member as POST /api/v1/samples takes it (other
// members are ignored); InvalidArgument naming the series and sample that is
// wrong, when more than `max_samples` samples, or when the body is not a
// JSON object (the message names `shape`, what the caller expected).
absl::StatusOr<model::SampleBatch> DecodeSamplesBody(std::string_view body, size_t max_samples,
                                                     std::string_view shape = "{\"series\": [...]}");
// The same into `*batch`, reusing what it holds from the last body: its
// series, their keys (kept where the series is the one decoded last time at
// that position, as agents send the same series in the same order) and their
// sample buffers. A request thread decoding one body after another then
// allocates almost nothing. After an error `*batch` holds part of the body:
// use it for the next body only.
absl::Status DecodeSamplesBodyInto(std::string_view body, size_t max_samples,
                                   model::SampleBatch* batch,
                                   std::string_view shape = "{\"series\": [...]}");
// Frees what a reused batch should not keep until the next body (call it
// after every body, decoded or refused): the whole batch when it has room for
// more than kMaxKeptDecodedSeries series or holds more than
// kMaxKeptDecodedBytes, and any buffer of more than 4,096 samples.
inline constexpr size_t kMaxKeptDecodedSeries = 8192;
inline constexpr size_t kMaxKeptDecodedBytes = size_t{8} << 20;
void TrimDecodedSamples(model::SampleBatch* batch);
// How many series keys the decoder keeps for this thread (it keeps those it
// decoded lately, bounded; samples_codec.cc).
size_t DecodedSeriesKeysKeptForTest();

// POST /api/v1/agent/heartbeat's body:
//   {"job": "ddp-3", "host": 2, "runner": {"hostname", "boot_id", "pid", "start_ticks"}}
std::string EncodeAgentHeartbeat(const AgentHeartbeat& heartbeat);
absl::StatusOr<AgentHeartbeat> DecodeAgentHeartbeat(std::string_view body);

// A batch as one request body (invalid UTF-8 in messages becomes U+FFFD).
std::string EncodeAgentBatch(const AgentBatch& batch);
absl::StatusOr<AgentBatch> DecodeAgentBatch(std::string_view body, size_t max_samples);

}  // namespace trainwatch::api
