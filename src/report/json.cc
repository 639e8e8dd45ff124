// RenderJson: the report's content as data (`trainwatch report --format json`).

#include <nlohmann/json.hpp>

#include "model/job_record_json.h"
#include "report/report.h"

namespace trainwatch::report {

namespace {

using Json = nlohmann::ordered_json;

Json ChartsJson(const std::vector<Chart>& charts) {
  Json out = Json::array();
  for (const Chart& c : charts) {
    Json lines = Json::array();
    for (const ChartLine& l : c.lines) {
      lines.push_back({{"label", l.label}, {"t_ms", l.t_ms}, {"values", l.values}});
    }
    out.push_back({{"title", c.title}, {"unit", c.unit}, {"lines", std::move(lines)}});
  }
  return out;
}

}  // namespace

std::string RenderJson(const JobReport& r) {
  Json out;
  // The record as the API gives it (statuses, transitions, rule statuses with findings).
  out["job"] = model::WireJobRecordJson(r.job);
  out["generated_ms"] = r.generated_ms;
  out["notes"] = r.notes;
  Json phases = {{"start_ms", r.phases.start_ms}, {"end_ms", r.phases.end_ms},
                 {"idle_ms", r.phases.idle_ms}, {"loop_from_steps", r.phases.loop_from_steps}};
  if (r.phases.loop_start_ms) phases["loop_start_ms"] = *r.phases.loop_start_ms;
  if (r.phases.loop_end_ms) phases["loop_end_ms"] = *r.phases.loop_end_ms;
  out["phases"] = std::move(phases);
  Json finals = Json::array();
  for (const FinalMetric& m : r.final_metrics) {
    finals.push_back({{"name", m.name}, {"value", m.value}, {"t_ms", m.t_ms}});
  }
  out["final_metrics"] = std::move(finals);
  out["metric_charts"] = ChartsJson(r.metric_charts);
  out["system_charts"] = ChartsJson(r.system_charts);
  Json usage = Json::array();
  for (const UsageRow& u : r.usage) {
    usage.push_back({{"host", u.host}, {"resource", u.resource}, {"unit", u.unit},
                     {"count", u.count}, {"p50", u.p50}, {"p95", u.p95}, {"max", u.max},
                     {"min", u.min}});
  }
  out["usage"] = std::move(usage);
  if (r.step_times) {
    const StepTimes& s = *r.step_times;
    Json slow = Json::array();
    for (const StepTimes::Slow& x : s.slowest) {
      slow.push_back({{"step", x.step}, {"t_ms", x.t_ms}, {"duration_ms", x.duration_ms}});
    }
    out["step_times"] = {{"steps", s.steps},         {"mean_ms", s.mean_ms},
                         {"p50_ms", s.p50_ms},       {"p95_ms", s.p95_ms},
                         {"p99_ms", s.p99_ms},       {"max_ms", s.max_ms},
                         {"histogram", {{"edges_ms", s.edges_ms}, {"counts", s.counts}}},
                         {"slowest", std::move(slow)}};
  } else {
    out["step_times"] = nullptr;
  }
  const Efficiency& e = r.efficiency;
  out["efficiency"] = {{"cpu_cores", e.cpu_cores},         {"cpu_core_hours", e.cpu_core_hours},
                       {"job_cpu_hours", e.job_cpu_hours}, {"host_cpu_mean", e.host_cpu_mean},
                       {"gpus", e.gpus},                   {"gpu_hours", e.gpu_hours},
                       {"gpu_util_mean", e.gpu_util_mean}, {"gpu_memory_max", e.gpu_memory_max}};
  return out.dump(2) + "\n";
}

}  // namespace trainwatch::report
