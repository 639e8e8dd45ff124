#include <cstdio>

#include "cli/allocator.h"
#include "cli/commands.h"

#ifndef TW_VERSION
#define TW_VERSION "unknown"
#endif

namespace trainwatch::cli {

#ifndef TW_ALLOCATOR_JEMALLOC
std::string AllocatorName() { return "system"; }
void ReturnFreedMemoryPromptly() {}
#endif

void RegisterVersionCommand(CLI::App& root, GlobalOptions* /*options*/, int* exit_code) {
  CLI::App* cmd = root.add_subcommand("version", "print trainwatch's version");
  cmd->callback([exit_code] {
    std::printf("trainwatch %s\n", TW_VERSION);
    std::printf("allocator: %s\n", AllocatorName().c_str());
    *exit_code = 0;
  });
}

}  // namespace trainwatch::cli
