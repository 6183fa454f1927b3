// The multi-host harness's checker (tests/hosts/): reads what really ran,
// as an event log, and reports every interval where two guarded children ran
// at once, every epoch that did not increase, and how long each fault took
// to resolve.
//
// Event log: one event per line, "<mono_ns> <kind> <host> <arg>", written
// by the children and the harness with CLOCK_MONOTONIC of the test machine
// (shared by every namespace; never under libfaketime):
//   start H E   a child started on host H with epoch E ("-": none)
//   stop H E    that child is stopping (its SIGTERM handler ran)
//   exit H S    the guard on H exited with status S; its child is gone too
//               (the guard is PID 1 of H's PID namespace)
//   fault H F   fault F was applied to host H ("*": the store server)
//   heal H F    and undone
//   end * -     the harness stops every guard: a child that ends after this
//               was not fenced, it was stopped
//   pause H -   every process of H was SIGSTOPped (written after the stops);
//   resume H -  they are about to be SIGCONTed (written before)
// Lines that do not parse are errors (named by line number).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hosts {

struct Event {
  std::int64_t t = 0;  // ns, CLOCK_MONOTONIC
  std::string kind;
  std::string host;
  std::string arg;
};

// One child's life: from its start to its stop, or to its guard's exit, or
// (still running) to the log's last event.
struct Interval {
  std::string host;
  std::optional<std::int64_t> epoch;
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool open = false;  // no stop or exit seen
};

struct Overlap {
  Interval older;  // the one that started first
  Interval newer;
  std::int64_t from = 0;
  std::int64_t to = 0;
  // The newer one started while the older one's host was paused: a stale
  // holder, which an epoch fences (older.epoch < newer.epoch). Such an
  // overlap is counted from the resume (a stopped child runs nothing).
  bool after_pause = false;
};

struct EpochRegression {
  Interval earlier;  // the largest epoch before
  Interval later;    // started after it with an epoch not larger
};

// A fault and what followed it, up to the next fault (or the end).
struct Resolution {
  std::string fault;
  std::string host;  // where the fault was applied
  std::int64_t at = 0;
  std::optional<std::int64_t> healed;    // ns after `at`
  bool hit_holder = false;               // the host held a child when the fault began
  std::optional<std::int64_t> fenced;    // fault -> that child stopped (ns), before the end
  std::optional<std::int64_t> takeover;  // fault -> a child started on another host
  std::optional<std::int64_t> handover;  // that child stopped -> the successor started
};

struct Report {
  std::vector<Interval> intervals;
  std::vector<Overlap> overlaps;
  std::vector<EpochRegression> regressions;
  std::vector<Resolution> resolutions;
  std::size_t unexpected_overlaps() const;  // those not after a pause
};

// Parses an event log; on a line that does not parse, returns its 1-based
// number in `bad_line`.
std::vector<Event> parse_events(const std::string& text, std::size_t* bad_line);

Report check(std::vector<Event> events);

// The report as text (one line per finding, then per fault a summary).
std::string format_text(const Report& report);
// The report as JSON (counts, overlaps, regressions, per-fault resolutions
// and per-fault-kind summaries in milliseconds).
std::string format_json(const Report& report);

}  // namespace hosts
