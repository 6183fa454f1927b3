// hosts-check: the multi-host harness's checker (check.hpp) as a program.
//   hosts-check now                   prints CLOCK_MONOTONIC in ns (the event
//                                     logs' clock; run it outside libfaketime)
//   hosts-check emit FILE KIND HOST ARG   appends "<now> KIND HOST ARG" to FILE
//                                     in one write (O_APPEND); exit 0 once written
//   hosts-check EVENTS [--json FILE] [--max-pause-overlap MS] [--expect-overlap]
// Prints the report; exit status 0 when no two children ran at once (beyond
// a stale holder that was paused, for at most --max-pause-overlap, default
// 0) and every epoch increased; 1 otherwise (with --expect-overlap: 0 only
// when some overlap not after a pause was seen, the checker's teeth); 2 on a
// usage error or a log that does not parse.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "hosts/check.hpp"

namespace {

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "now") {
    std::printf("%lld\n", monotonic_ns());
    return 0;
  }
  if (argc == 6 && std::string(argv[1]) == "emit") {
    // One write, so that lines from many processes never interleave, and a
    // process killed before it is a line missing, never half a line.
    const std::string line =
        std::to_string(monotonic_ns()) + " " + argv[3] + " " + argv[4] + " " + argv[5] + "\n";
    const int fd = ::open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return 1;
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    return written ? 0 : 1;
  }
  if (argc < 2) {
    std::cerr << "usage: hosts-check now | hosts-check emit FILE KIND HOST ARG | "
                 "hosts-check EVENTS [--json FILE] [--max-pause-overlap MS] [--expect-overlap]\n";
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
