#pragma once
// How `trainwatch run` finds the server that holds its data folder: while a
// `trainwatch server` is the folder's writer, it keeps "<data>/server.json"
// ({"url": "http://127.0.0.1:9400", "pid": 4242}); runs on that folder then
// send their data to that URL (agent/remote_sink.h) instead of writing it.

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace trainwatch::agent {

// Writes server.json (atomically) for this process and `url`.
absl::Status PublishServer(const std::string& data_dir, const std::string& url);
// Removes server.json if this process wrote it.
void WithdrawServer(const std::string& data_dir);
// The URL in server.json when the process that wrote it is alive.
std::optional<std::string> FindServer(const std::string& data_dir);

// "<data>/spool": where agents on this machine keep what the server has not taken yet.
std::string SpoolRoot(const std::string& data_dir);

}  // namespace trainwatch::agent
