#pragma once
// The agent: the client side of a `trainwatch server` that takes a run's data
// (the server that holds the data folder, found through server_discovery.h,
// or --endpoint). `trainwatch run` writes to an agent::RemoteSink instead of
// the store; nothing above it (the job runner, capture, extraction, the
// profiler) can tell the difference (model/sinks.h).
//
//   runner ──Put/PutLogs/UpdateJob──▶ Spool (on disk) ──sender thread──▶ POST /api/v1/agent/deliver
//   StopWatcher ──every second──▶ POST /api/v1/agent/heartbeat ──"stop"──▶ JobRunner::RequestStop
//
// What the agent guarantees:
//
// - Durable before acknowledged. Put, PutLogs and UpdateJob return OK once
//   the batch is in the spool on disk (fdatasync): "accepted by a durable
//   spool", as model/sinks.h allows a remote sink. A crash loses nothing
//   acknowledged; a record torn by a crash mid-append is cut off on reopen
//   (spool.h). The spool is bounded (RemoteSinkOptions::spool_max_bytes,
//   1 GiB): when full, the call fails with ResourceExhausted and writes
//   nothing.
// - Exactly once, in order. Every batch carries the agent's name (unique per
//   run, NewAgentName) and its number in the spool (seq). The sender sends the
//   oldest batch not yet taken, one at a time, until the server answers; the
//   server writes each (agent, seq) once, so a batch sent again after a lost
//   answer, a timeout or a server restart is never written twice. A spool left
//   behind by an agent that ended first is delivered by `trainwatch server` on
//   that data folder when it starts (DeliverLeftoverSpool).
// - Backoff. While the server cannot be reached, or answers 5xx, 408 or 429,
//   the sender retries the same batch after 100 ms, doubling to 5 s, and says
//   so once in the log. Any other 4xx refuses the batch for good: it is dropped
//   with a warning (CreateJob returns that refusal, e.g. AlreadyExists).
// - What blocks. Put, PutLogs and UpdateJob wait for the local disk only,
//   never for the network: the training process never waits for the server.
//   CreateJob waits for the server's answer (at most create_timeout_ms, 30 s),
//   since a name that is taken must stop the run before its command starts.
//   GetJob and Heartbeat are one HTTP exchange each (bounded by the request
//   timeouts; a heartbeat by 5 s). Drain waits until everything is delivered
//   or its timeout. Destroying a RemoteSink waits for the request in flight
//   and leaves what is not delivered in the spool.
// - Threads. RemoteSink is thread-safe and owns one sender thread; Spool
//   takes one appender and one sender at once; HttpClient is for one thread at
//   a time; StopWatcher owns one thread, which calls `beat` and, on the first
//   stop asked for, `on_stop` (once). Server discovery is plain functions
//   over files.
//
// Where each part is:
//   remote_sink.h       RemoteSink (model::TelemetrySink over HTTP), HttpClient,
//                       DeliverLeftoverSpool
//   spool.h             Spool: the on-disk FIFO of batches (format in its header)
//   server_discovery.h  <data>/server.json: which server holds a data folder;
//                       SpoolRoot
//   stop_watcher.h      StopWatcher: heartbeats, and stops asked through the server
//
// The agent uses model and util, and the wire format it shares with
// api/native: api/native/agent_wire.h (AgentBatch, AgentHeartbeat),
// api/native/agent_codec.h (their JSON) and api/snappy_body.h (compressed
// bodies), and api/sigv4.h to sign requests as the server verifies them
// (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, for a server
// with --auth); nothing else of api/ (tools/check_layers.py). libcurl is loaded
// on first use (remote_sink.cc), and used nowhere else.

#include "agent/remote_sink.h"
#include "agent/server_discovery.h"
#include "agent/spool.h"
#include "agent/stop_watcher.h"
