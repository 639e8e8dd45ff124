#include "app/client_endpoint.h"

#include "app/python_package.h"

namespace trainwatch::app {

absl::StatusOr<std::unique_ptr<ClientEndpoint>> ClientEndpoint::Start(model::SampleSink* sink,
                                                                      const std::string& version) {
  std::unique_ptr<ClientEndpoint> endpoint(new ClientEndpoint(sink));
  ServeOptions options;
  options.version = version;
  options.server.host = "127.0.0.1";
  options.server.port = 0;
  options.server.threads = 1;
  // Only ingest: the process reads nothing back through its runner.
  const api::Backends backends{.samples = endpoint.get()};
  absl::StatusOr<std::unique_ptr<Serving>> serving = Serving::Start(options, backends, nullptr);
  if (!serving.ok()) return serving.status();
  endpoint->serving_ = *std::move(serving);
  endpoint->url_ = endpoint->serving_->url();
  return endpoint;
}

ClientEndpoint::~ClientEndpoint() { serving_.reset(); }

void ClientEndpoint::OnTrainingExited(const model::JobRecord&, const capture::ExitStatus&) {
  serving_.reset();  // stops listening; the requests in flight are answered first
}

std::map<std::string, std::string> ClientEndpoint::Environment(const std::string& python_dir) const {
  std::map<std::string, std::string> env{{"TRAINWATCH_RUNNER_URL", url_}};
  if (!python_dir.empty()) env["PYTHONPATH"] = PythonPathWith(python_dir);
  return env;
}

absl::Status ClientEndpoint::Put(const model::SampleBatch& batch) {
  absl::Status stored = sink_->Put(batch);
  if (!stored.ok()) return stored;
  if (job::TrainingRun* run = run_.load()) run->NoteSentMetrics(batch);
  return absl::OkStatus();
}

}  // namespace trainwatch::app
