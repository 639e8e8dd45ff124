#pragma once
// What this binary is: the project's version and, when it was built from a
// git checkout, the commit ("0.1.0 (commit 0123456789ab)", with ", with
// uncommitted changes" when tracked files differed from it). The build
// writes the definition (cmake/build_info.cmake).

namespace trainwatch::cli {

const char* VersionString();

}  // namespace trainwatch::cli
