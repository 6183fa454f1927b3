// hosts-check: the multi-host harness's checker (check.hpp) as a program.
//   hosts-check now                   prints CLOCK_MONOTONIC in ns (the event
//                                     logs' clock; run it outside libfaketime)
//   hosts-check EVENTS [--json FILE] [--max-pause-overlap MS] [--expect-overlap]
// Prints the report; exit status 0 when no two children ran at once (beyond
// a stale holder that was paused, for at most --max-pause-overlap, default
// 0) and every epoch increased; 1 otherwise (with --expect-overlap: 0 only
// when some overlap not after a pause was seen, the checker's teeth); 2 on a
// usage error or a log that does not parse.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "hosts/check.hpp"

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "now") {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    std::printf("%lld\n", static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec);
    return 0;
  }
  if (argc < 2) {
    std::cerr << "usage: hosts-check now | hosts-check EVENTS [--json FILE] "
                 "[--max-pause-overlap MS] [--expect-overlap]\n";
    return 2;
  }
  std::string json_path;
  double max_pause_overlap_ms = 0;
  bool expect_overlap = false;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (flag == "--max-pause-overlap" && i + 1 < argc) {
      max_pause_overlap_ms = std::atof(argv[++i]);
    } else if (flag == "--expect-overlap") {
      expect_overlap = true;
    } else {
      std::cerr << "hosts-check: unknown argument " << flag << "\n";
      return 2;
    }
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "hosts-check: cannot read " << argv[1] << "\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::size_t bad = 0;
  auto events = hosts::parse_events(text.str(), &bad);
  if (bad != 0) {
    std::cerr << "hosts-check: " << argv[1] << ":" << bad
              << ": not \"<mono_ns> <kind> <host> <arg>\" with a known kind\n";
    return 2;
  }
  const auto report = hosts::check(std::move(events));
  std::cout << hosts::format_text(report);
  if (!json_path.empty()) std::ofstream(json_path) << hosts::format_json(report) << "\n";
  bool pause_ok = true;
  for (const auto& o : report.overlaps) {
    if (o.after_pause && static_cast<double>(o.to - o.from) / 1e6 > max_pause_overlap_ms) {
      pause_ok = false;
    }
  }
  if (expect_overlap) return report.unexpected_overlaps() > 0 ? 0 : 1;
  return report.unexpected_overlaps() == 0 && report.regressions.empty() && pause_ok ? 0 : 1;
}
