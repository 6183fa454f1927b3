// The tenure history as a picture: `instance-guard history --svg FILE`.
#pragma once

#include <string>

#include "instance/history.hpp"

namespace instance::cli {

// A standalone SVG document: one row per host (per id when one host ran a
// few ids in turn), a bar per tenure on a time
// axis (coloured by how it ended, its id on it where it fits, every detail
// in its tooltip), overlaps as red bands across every row, hand-over gaps
// labelled under the axis, a scale and a legend. Drawn here, with no
// library: the picture is a few rectangles and lines.
std::string timeline_svg(const HistoryReport& report, const std::string& store, WallTime now);

}  // namespace instance::cli
