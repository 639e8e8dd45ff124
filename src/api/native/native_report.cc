// GET /api/v1/jobs/NAME/report: the job's report (report/report.h), as the
// self-contained HTML page or, with format=json, its content as data.

#include "absl/strings/str_format.h"
#include "api/form.h"
#include "api/native/native_api.h"
#include "api/native/native_util.h"
#include "report/report.h"

namespace trainwatch::api {

using namespace native_internal;  // NOLINT: the NativeApi's own helpers

HttpResponse NativeApi::Report(const std::string& name, const HttpRequest& request) const {
  if (backends_.jobs == nullptr) return NoBackend("job runner");
  if (backends_.metrics == nullptr || backends_.logs == nullptr) return NoBackend("metric store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  const std::string* format = Param(*params, "format");
  const bool json = format != nullptr && *format == "json";
  if (format != nullptr && !json && *format != "html") {
    return Error(400, "InvalidArgument",
                 absl::StrFormat("format=%s: use html (the page, default) or json (its content)",
                                 *format));
  }
  absl::StatusOr<std::optional<model::JobRecord>> job = backends_.jobs->GetJob(name);
  if (!job.ok()) return FromStatus(job.status());
  if (!*job) return Error(404, "NotFound", absl::StrFormat("no job named %s", name));
  report::ReportOptions options;
  options.now_ms = options.generated_ms = clock_.NowMs();
  absl::StatusOr<report::JobReport> built =
      report::BuildReport(**job, *backends_.metrics, *backends_.logs, options);
  if (!built.ok()) return FromStatus(built.status());
  HttpResponse r;
  r.status = 200;
  r.headers.Add("Content-Type", json ? "application/json" : "text/html; charset=utf-8");
  r.body = json ? report::RenderJson(*built) : report::RenderHtml(*built);
  return r;
}

}  // namespace trainwatch::api
