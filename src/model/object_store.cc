#include "model/object_store.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace trainwatch::model {

absl::Status CheckObjectKey(std::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("an object key is empty");
  for (absl::string_view part : absl::StrSplit(absl::string_view(key.data(), key.size()), '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the object key \"%s\" has an empty, \".\" or \"..\" part", key));
    }
    for (char c : part) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' &&
          c != '.') {
        return absl::InvalidArgumentError(absl::StrFormat(
            "the object key \"%s\" has '%c'; keys take letters, digits, '-', '_', '.' and '/'",
            key, c));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::model
