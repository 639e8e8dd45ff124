#include "store/job_codec.h"

#include <cctype>

#include "absl/strings/str_format.h"
#include "model/job_record_json.h"

namespace trainwatch::store {

std::string JobKey(std::string_view name) {
  std::string key = "j";
  for (char c : name) key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return key;
}

std::string JobHostKey(std::string_view name, int host_index) {
  std::string key = JobKey(name);
  if (host_index != 1) key += absl::StrFormat("%c%d", kJobHostSeparator, host_index);
  return key;
}

std::string_view JobKeyOfHostKey(std::string_view host_key) {
  return host_key.substr(0, host_key.find(kJobHostSeparator));
}

std::string EncodeJob(const model::JobRecord& job) { return model::EncodeStoredJobRecord(job); }

absl::StatusOr<model::JobRecord> DecodeJob(std::string_view bytes) {
  return model::DecodeStoredJobRecord(bytes);
}

std::string AlarmKey(std::string_view name) { return std::string(kAlarmKeyPrefix) + std::string(name); }

}  // namespace trainwatch::store
