#include "util/shared_library.h"

#include <dlfcn.h>

#include "absl/strings/str_format.h"

namespace trainwatch::util {

absl::StatusOr<std::unique_ptr<SharedLibrary>> SharedLibrary::Open(const std::string& name) {
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    return absl::UnavailableError(err != nullptr ? err : absl::StrFormat("cannot load %s", name));
  }
  return std::unique_ptr<SharedLibrary>(new SharedLibrary(handle));
}

SharedLibrary::~SharedLibrary() { ::dlclose(handle_); }

void* SharedLibrary::Find(const char* symbol) const { return ::dlsym(handle_, symbol); }

}  // namespace trainwatch::util
