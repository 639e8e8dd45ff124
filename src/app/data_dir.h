#pragma once
// Where trainwatch keeps its data when the user does not say.

#include <string>

namespace trainwatch::app {

// `flag` when not empty; else $TRAINWATCH_DATA; else $XDG_DATA_HOME/trainwatch;
// else $HOME/.local/share/trainwatch; else ./trainwatch-data.
std::string ResolveDataDir(const std::string& flag);

}  // namespace trainwatch::app
