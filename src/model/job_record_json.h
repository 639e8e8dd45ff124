#pragma once
// The JSON codec of a JobRecord: one list of members, written and read in the
// two forms a record travels in. Both use the same member names and value
// shapes, so each form's reader reads what the other form's writer wrote.
//
// Stored (store/job_codec.h; docs/format/store.md, "jobs"): members sorted
// by name, "v": 1, every member present even when empty except the optional
// ones (training_start_ms, training_end_ms, end_ms, exit_code, exit_signal,
// stop_requested_ms); no "host" and no "hosts": a stored record is one host's.
//
//   {"arn":"...","command":["python3","t.py"],"creation_ms":1736942400000,...,"v":1,...}
//
// Reading it is lenient, as data folders of every earlier version must open:
// a member that is missing (added since) or null keeps the JobRecord default,
// and so does a status spelling this version does not know.
//
// Wire (GET /api/v1/jobs/NAME, agents' create_job and update_job batches;
// api/native/agent_codec.h, docs/api.md): members in the order of JobRecord's
// fields; failure_reason and request_json only when not empty; "host" (the
// host name, "<name>/algo-<n>") after host_index, for readers; "hosts", each
// host's own record, for a job on several hosts.
//
// Reading it is strict: InvalidArgument naming the member that is missing or
// of the wrong type (for example "job.transitions: start_ms is missing").

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/job_record.h"
#include "nlohmann/json.hpp"

namespace trainwatch::model {

// The stored form as bytes; invalid UTF-8 (a command line is bytes) becomes
// U+FFFD rather than an error.
std::string EncodeStoredJobRecord(const JobRecord& job);
// DataLoss quoting the bytes when they are not a JSON object with a "name",
// or naming what has the wrong type.
absl::StatusOr<JobRecord> DecodeStoredJobRecord(std::string_view bytes);

// The wire form, to be sent as it is or as part of a larger body.
nlohmann::ordered_json WireJobRecordJson(const JobRecord& job);
absl::StatusOr<JobRecord> JobRecordFromWireJson(const nlohmann::json& j);

}  // namespace trainwatch::model
