// instance-guard-sim: runs N guards against a simulated store in virtual
// time and reports, per mode, how often two of them held at once.
//
//   instance-guard-sim                      the default scenario (under a minute)
//   instance-guard-sim --seeds 10000 --guards 16 --jobs 2   the long run
//   instance-guard-sim --lag 500ms --modes verify --expect-overlap verify
//   instance-guard-sim --modes verify --seed-start 42 --seeds 1 --trace
//
// Exits 1 when a mode that must exclude under the configuration (exclusive,
// auto, and verify while lag <= settle) shows a double holder, or when a
// mode named by --expect-overlap shows none; 2 on a usage error.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "instance/time.hpp"
#include "sim.hpp"

namespace {

using instance::Duration;
using instance::Mode;
using namespace instance::sim;

struct Options {
  Config base;
  std::vector<Mode> modes{Mode::announce, Mode::verify, Mode::exclusive, Mode::automatic};
  std::uint64_t seeds = 100;
  std::uint64_t seed_start = 1;
  int jobs = 2;
  std::string json;
  std::vector<Mode> expect_overlap;
  bool trace = false;
};

const char* kUsage =
    "usage: instance-guard-sim [--modes announce,verify,exclusive,auto] [--seeds N]\n"
    "  [--seed-start S] [--guards N] [--duration D] [--ttl D] [--settle D] [--max-skew D]\n"
    "  [--lag D] [--latency D] [--latency-sigma X] [--spike-prob P] [--spike D] [--timeout D]\n"
    "  [--start-spread D] [--hold D] [--rest D] [--poll-min D] [--poll-max D]\n"
    "  [--crashes R] [--pauses R] [--pause-max D] [--partitions R] [--partition-max D]\n"
    "  [--restart-same-id P] [--clock-offset D] [--drift X] [--jobs N] [--json FILE|-]\n"
    "  [--lag-check on|off] [--stale-locks on|off] [--same-host on|off] [--reboots R]\n"
    "  [--atomic-lease on|off]\n"
    "  [--expect-overlap MODE]... [--trace]\n"
    "Durations in Go syntax (300ms, 2s); rates R per node per virtual minute.\n";

bool parse(int argc, char** argv, Options& o, std::string& error) {
  auto dur = [&](std::string_view v, Duration& out) {
    auto d = instance::parse_duration(v);
    if (!d)
      error = d.error().message;
    else
      out = *d;
    return d.has_value();
  };
  auto num = [&](std::string_view v, double& out) {
    try {
      out = std::stod(std::string(v));
      return true;
    } catch (...) {
      error = "not a number: " + std::string(v);
      return false;
    }
  };
  auto modes = [&](std::string_view v, std::vector<Mode>& out) {
    out.clear();
    std::stringstream ss{std::string(v)};
    for (std::string m; std::getline(ss, m, ',');) {
      auto mode = instance::parse_mode(m);
      if (!mode) {
        error = mode.error().message;
        return false;
      }
      out.push_back(*mode);
    }
    return !out.empty();
  };
  Config& c = o.base;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--trace") {
      o.trace = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      error = "";
      return false;
    }
    if (i + 1 >= argc) {
      error = "missing value after " + std::string(a);
      return false;
    }
    const std::string_view v = argv[++i];
    double x = 0;
    Duration d{};
    bool ok = true;
    if (a == "--modes")
      ok = modes(v, o.modes);
    else if (a == "--expect-overlap") {
      std::vector<Mode> m;
      ok = modes(v, m);
      o.expect_overlap.insert(o.expect_overlap.end(), m.begin(), m.end());
    } else if (a == "--seeds")
      ok = num(v, x) && (o.seeds = static_cast<std::uint64_t>(x), true);
    else if (a == "--seed-start")
      ok = num(v, x) && (o.seed_start = static_cast<std::uint64_t>(x), true);
    else if (a == "--guards")
      ok = num(v, x) && (c.guards = static_cast<int>(x), true);
    else if (a == "--jobs")
      ok = num(v, x) && (o.jobs = std::max(1, static_cast<int>(x)), true);
    else if (a == "--json")
      o.json = v;
    else if (a == "--duration")
      ok = dur(v, d) && (c.duration = d, true);
    else if (a == "--ttl")
      ok = dur(v, c.ttl);
    else if (a == "--settle")
      ok = dur(v, c.settle);
    else if (a == "--max-skew")
      ok = dur(v, d) && (c.max_skew = d, true);
    else if (a == "--lag")
      ok = dur(v, c.lag);
    else if (a == "--latency")
      ok = dur(v, c.latency);
    else if (a == "--latency-sigma")
      ok = num(v, c.latency_sigma);
    else if (a == "--spike-prob")
      ok = num(v, c.spike_probability);
    else if (a == "--spike")
      ok = dur(v, c.spike);
    else if (a == "--timeout")
      ok = dur(v, c.timeout);
    else if (a == "--start-spread")
      ok = dur(v, c.start_spread);
    else if (a == "--hold")
      ok = dur(v, c.hold_mean);
    else if (a == "--rest")
      ok = dur(v, c.rest);
    else if (a == "--poll-min")
      ok = dur(v, c.poll_min);
    else if (a == "--poll-max")
      ok = dur(v, c.poll_max);
    else if (a == "--crashes")
      ok = num(v, c.crashes_per_minute);
    else if (a == "--pauses")
      ok = num(v, c.pauses_per_minute);
    else if (a == "--pause-max")
      ok = dur(v, c.pause_max);
    else if (a == "--partitions")
      ok = num(v, c.partitions_per_minute);
    else if (a == "--partition-max")
      ok = dur(v, c.partition_max);
    else if (a == "--restart-same-id")
      ok = num(v, c.same_id_restart);
    else if (a == "--clock-offset")
      ok = dur(v, c.clock_offset);
    else if (a == "--drift")
      ok = num(v, c.drift);
    else if (a == "--stale-locks") {
      ok = v == "on" || v == "off";
      c.stale_locks = v == "on";
    } else if (a == "--atomic-lease") {
      ok = v == "on" || v == "off";
      c.atomic_lease = v == "on";
    } else if (a == "--same-host") {
      ok = v == "on" || v == "off";
      c.same_host = v == "on";
    } else if (a == "--reboots") {
      ok = num(v, c.reboots_per_minute);
    } else if (a == "--lag-check") {
      ok = v == "on" || v == "off";
      c.lag_check = v == "on";
    } else {
      error = "unknown option " + std::string(a);
      return false;
    }
    if (!ok) {
      if (error.empty()) error = "bad value for " + std::string(a);
      return false;
    }
  }
  if (c.guards < 1 || c.guards > 1000)
    error = "--guards must be 1..1000";
  else if (c.ttl <= Duration::zero())
    error = "--ttl must be positive";
  return error.empty();
}

struct Summary {
  Mode mode;
  std::uint64_t runs = 0, claims = 0, losses = 0, crashes = 0, store_ops = 0, events = 0;
  std::uint64_t reboots = 0, earlier_boot_ends = 0;
  std::uint64_t overlaps = 0;
  Time overlap_total{0}, overlap_max{0};
  std::vector<std::uint64_t> overlap_seeds;
  std::vector<Time> takeovers, handovers;
  std::uint64_t trace = 0;  // combined over seeds, in seed order
  bool must_exclude = false;
};

double ms(Time t) { return static_cast<double>(t.count()) / 1e6; }

nlohmann::json stats(std::vector<Time> v) {
  nlohmann::json j;
  j["count"] = v.size();
  if (v.empty()) return j;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return ms(v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]);
  };
  double sum = 0;
  for (Time t : v) sum += ms(t);
  j["mean_ms"] = sum / static_cast<double>(v.size());
  j["p50_ms"] = at(0.5);
  j["p99_ms"] = at(0.99);
  j["max_ms"] = ms(v.back());
  return j;
}

Summary run_mode(const Options& o, Mode mode) {
  Config c = o.base;
  c.mode = mode;
  c.keep_log = o.trace;
  Summary s{.mode = mode, .must_exclude = must_exclude(c)};
  std::vector<RunResult> results(o.seeds);
  std::atomic<std::uint64_t> next{0};
  auto worker = [&] {
    for (std::uint64_t i; (i = next++) < o.seeds;) results[i] = run_one(c, o.seed_start + i);
  };
  std::vector<std::thread> pool;
  for (int j = 1; j < o.jobs; ++j) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  std::uint64_t trace = 1469598103934665603ull;
  for (const RunResult& r : results) {
    ++s.runs;
    s.claims += r.claims;
    s.losses += r.losses;
    s.crashes += r.crashes;
    s.reboots += r.reboots;
    s.earlier_boot_ends += r.earlier_boot_ends;
    s.store_ops += r.store_ops;
    s.events += r.events;
    if (!r.overlaps.empty()) s.overlap_seeds.push_back(r.seed);
    for (const Overlap& ov : r.overlaps) {
      ++s.overlaps;
      s.overlap_total += ov.duration;
      s.overlap_max = std::max(s.overlap_max, ov.duration);
    }
    s.takeovers.insert(s.takeovers.end(), r.takeovers.begin(), r.takeovers.end());
    s.handovers.insert(s.handovers.end(), r.handovers.begin(), r.handovers.end());
    trace = (trace ^ r.trace) * 1099511628211ull;
    if (o.trace) {
      std::cout << "# " << instance::to_string(mode) << " seed " << r.seed << "\n";
      for (const auto& line : r.log) std::cout << line << "\n";
      for (const Overlap& ov : r.overlaps) {
        std::cout << "# double holder at " << ms(ov.start) << " ms for " << ms(ov.duration)
                  << " ms:";
        for (const auto& h : ov.holders) std::cout << " " << h;
        std::cout << "\n";
      }
    }
  }
  s.trace = trace;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  if (!parse(argc, argv, o, error)) {
    if (!error.empty()) std::cerr << "instance-guard-sim: " << error << "\n";
    std::cerr << kUsage;
    return error.empty() ? 0 : 2;
  }
  const Config& c = o.base;
  nlohmann::ordered_json out;
  out["config"] = {{"seeds", o.seeds},
                   {"seed_start", o.seed_start},
                   {"guards", c.guards},
                   {"duration", instance::format_duration(c.duration)},
                   {"ttl", instance::format_duration(c.ttl)},
                   {"settle", instance::format_duration(c.settle)},
                   {"lag", instance::format_duration(c.lag)},
                   {"latency", instance::format_duration(c.latency)},
                   {"timeout", instance::format_duration(c.timeout)},
                   {"crashes_per_minute", c.crashes_per_minute},
                   {"pauses_per_minute", c.pauses_per_minute},
                   {"pause_max", instance::format_duration(c.pause_max)},
                   {"partitions_per_minute", c.partitions_per_minute},
                   {"clock_offset", instance::format_duration(c.clock_offset)},
                   {"drift", c.drift}};
  std::printf("%-9s %7s %9s %7s %8s %12s %12s %10s %10s %12s %8s %s\n", "mode", "runs", "claims",
              "losses", "double", "double_ms", "max_ms", "takeover", "handover", "ops/run", "must",
              "trace");
  int status = 0;
  for (Mode mode : o.modes) {
    const Summary s = run_mode(o, mode);
    const auto take = stats(s.takeovers), hand = stats(s.handovers);
    std::printf(
        "%-9s %7llu %9llu %7llu %8llu %12.1f %12.1f %10.0f %10.0f %12.0f %8s %016llx\n",
        std::string(instance::to_string(mode)).c_str(), static_cast<unsigned long long>(s.runs),
        static_cast<unsigned long long>(s.claims), static_cast<unsigned long long>(s.losses),
        static_cast<unsigned long long>(s.overlaps), ms(s.overlap_total), ms(s.overlap_max),
        take.value("p50_ms", 0.0), hand.value("p50_ms", 0.0),
        static_cast<double>(s.store_ops) / static_cast<double>(std::max<std::uint64_t>(1, s.runs)),
        s.must_exclude ? "exclude" : "-", static_cast<unsigned long long>(s.trace));
    nlohmann::ordered_json m;
    m["runs"] = s.runs;
    m["claims"] = s.claims;
    m["losses"] = s.losses;
    m["crashes"] = s.crashes;
    m["reboots"] = s.reboots;
    m["earlier_boot_lock_ends"] = s.earlier_boot_ends;
    m["double_holder_intervals"] = s.overlaps;
    m["double_holder_total_ms"] = ms(s.overlap_total);
    m["double_holder_max_ms"] = ms(s.overlap_max);
    std::vector<std::uint64_t> first(
        s.overlap_seeds.begin(),
        s.overlap_seeds.begin() +
            static_cast<std::ptrdiff_t>(std::min<std::size_t>(20, s.overlap_seeds.size())));
    m["double_holder_seeds"] = first;
    m["crash_takeover"] = take;
    m["handover_gap"] = hand;
    m["store_ops"] = s.store_ops;
    m["events"] = s.events;
    m["must_exclude"] = s.must_exclude;
    m["trace"] = s.trace;
    out["modes"][std::string(instance::to_string(mode))] = m;
    if (s.must_exclude && s.overlaps > 0) {
      std::fprintf(stderr, "FAIL: %s showed %llu double-holder intervals (first seeds:",
                   std::string(instance::to_string(mode)).c_str(),
                   static_cast<unsigned long long>(s.overlaps));
      for (auto seed : first) std::fprintf(stderr, " %llu", static_cast<unsigned long long>(seed));
      std::fprintf(stderr, ")\n");
      status = 1;
    }
    if (std::find(o.expect_overlap.begin(), o.expect_overlap.end(), mode) !=
            o.expect_overlap.end() &&
        s.overlaps == 0) {
      std::fprintf(stderr, "FAIL: %s was expected to show double holders and showed none\n",
                   std::string(instance::to_string(mode)).c_str());
      status = 1;
    }
  }
  if (!o.json.empty()) {
    if (o.json == "-") {
      std::cout << out.dump(2) << "\n";
    } else {
      std::ofstream f(o.json);
      f << out.dump(2) << "\n";
    }
  }
  return status;
}
