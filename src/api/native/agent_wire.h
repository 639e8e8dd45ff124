#pragma once
// The messages of a remote `trainwatch run` (an agent, src/agent) to the
// server that takes its data, in trainwatch's terms; api/native/agent_codec.h
// puts them on the wire and reads them back. Shared by the agent and the api
// (DESIGN.md: the agent may use "the wire codec it shares with api/native"),
// so this header uses nothing of api/: only model/.

#include <cstdint>
#include <string>

#include "model/job_record.h"
#include "model/log_event.h"
#include "model/series.h"

namespace trainwatch::api {

// One batch of a remote `trainwatch run` (POST /api/v1/agent/deliver): what
// it would have written to a store of its own. `agent` and `seq` make the
// delivery exactly-once: the server writes a batch whose number it has seen
// from that agent only once.
struct AgentBatch {
  enum class Kind { kSamples, kLogs, kCreateJob, kUpdateJob };
  std::string agent;
  int64_t seq = 0;
  Kind kind = Kind::kSamples;
  model::SampleBatch samples;  // kSamples
  model::LogBatch logs;        // kLogs
  model::JobRecord job;        // kCreateJob, kUpdateJob
};

// A `trainwatch run` that sends to a server says it is alive about once a
// second (POST /api/v1/agent/heartbeat) and learns whether a stop was asked of
// it: the server cannot check or signal a runner on another machine.
struct AgentHeartbeat {
  std::string job;
  int host = 1;
  model::RunnerIdentity runner;  // must be the one in the host's record
};

}  // namespace trainwatch::api
