#pragma once
// A shared library loaded when first needed (dlopen), and typed lookups of
// its functions: for optional dependencies that most commands never use or a
// machine may lack, such as libcurl (agent/remote_sink.cc) and NVML
// (profiler/nvml.cc).

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace trainwatch::util {

class SharedLibrary {
 public:
  // dlopen(name, RTLD_NOW | RTLD_LOCAL); Unavailable with dlerror's reason.
  static absl::StatusOr<std::unique_ptr<SharedLibrary>> Open(const std::string& name);
  // dlclose: functions bound from the library are invalid after.
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // Points *fn at the library's `symbol`; false (and *fn null) when it lacks it.
  template <typename Fn>
  bool Bind(Fn** fn, const char* symbol) const {
    *fn = reinterpret_cast<Fn*>(Find(symbol));
    return *fn != nullptr;
  }
  // Bind, adding " symbol" to *missing when the library lacks it.
  template <typename Fn>
  void Require(Fn** fn, const char* symbol, std::string* missing) const {
    if (!Bind(fn, symbol)) missing->append(" ").append(symbol);
  }

 private:
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  void* Find(const char* symbol) const;

  void* handle_;
};

}  // namespace trainwatch::util
