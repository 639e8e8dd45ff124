#include <cstdio>

#include "cli/allocator.h"
#include "cli/build_info.h"
#include "cli/commands.h"

namespace trainwatch::cli {

#ifndef TW_ALLOCATOR_JEMALLOC
std::string AllocatorName() { return "system"; }
void PrepareAllocatorForServing() {}
#endif

void RegisterVersionCommand(CLI::App& root, GlobalOptions* /*options*/, int* exit_code) {
  CLI::App* cmd = root.add_subcommand("version", "print trainwatch's version");
  cmd->footer(
      "Examples:\n"
      "  trainwatch version\n"
      "  trainwatch --version");
  cmd->callback([exit_code] {
    std::printf("trainwatch %s\n", VersionString());
    std::printf("allocator: %s\n", AllocatorName().c_str());
    *exit_code = 0;
  });
}

}  // namespace trainwatch::cli
