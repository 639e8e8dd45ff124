#include "app/data_dir.h"

#include <cstdlib>

namespace trainwatch::app {

std::string ResolveDataDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TRAINWATCH_DATA"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/trainwatch";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.local/share/trainwatch";
  }
  return "trainwatch-data";
}

}  // namespace trainwatch::app
