// The guard simulator's model: N guards, each on its own simulated node
// (clock with offset and drift, scheduler, pauses, crashes, restarts,
// partitions), against one simulated store with request and response
// latencies and a visibility lag, all in virtual time on a World.
//
// A run is a pure function of (Config, seed): run_one() twice with the same
// arguments gives the same RunResult, trace hash included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "instance/guard.hpp"
#include "world.hpp"

namespace instance::sim {

struct Config {
  Mode mode = Mode::verify;
  int guards = 4;
  Time duration = std::chrono::seconds(60);
  // Guard options.
  Duration ttl = std::chrono::seconds(3);
  Duration settle = std::chrono::milliseconds(50);
  std::optional<Duration> max_skew;  // the guard's default when unset
  // Store: latency of each request and of each response, log-normal with this
  // median and sigma, plus rare spikes; a request taking longer than
  // `timeout` end to end fails with Errc::timeout (it may still be applied).
  Duration latency = std::chrono::milliseconds(5);
  double latency_sigma = 0.8;
  double spike_probability = 0.002;
  Duration spike = std::chrono::milliseconds(800);
  Duration timeout = std::chrono::seconds(2);
  // An acknowledged write shows in reads and listings after a lag uniform in
  // [0, lag] (0: atomic registers).
  Duration lag{0};
  // Nodes start within this window (contention at start-up).
  Duration start_spread = std::chrono::milliseconds(20);
  // Holders stand down after an exponential time with this mean, then rest.
  Duration hold_mean = std::chrono::seconds(8);
  Duration rest = std::chrono::seconds(1);
  // Waiters poll every [poll_min, poll_max].
  Duration poll_min = std::chrono::milliseconds(100);
  Duration poll_max = std::chrono::milliseconds(500);
  // Faults, as rates per node per virtual minute.
  double crashes_per_minute = 0.5;
  Duration restart_min = std::chrono::milliseconds(200);
  Duration restart_max = std::chrono::seconds(3);
  double same_id_restart = 0.5;  // probability a restart keeps its id
  double pauses_per_minute = 0.5;
  Duration pause_max = std::chrono::seconds(5);  // uniform in (0, pause_max]
  double partitions_per_minute = 0.3;
  Duration partition_max = std::chrono::seconds(5);
  // Clocks: offsets uniform in [-offset, offset], rates 1 + uniform[-drift, drift].
  Duration clock_offset = std::chrono::milliseconds(100);
  double drift = 1e-4;
  // verify: the guard's own visibility self-test (GuardOptions::check_lag).
  bool lag_check = true;
  // exclusive and auto: a store whose locks never expire and that has no
  // conditional writes (phodav): the guards must end a fenced holder's lock
  // themselves (Capabilities::ends_stale_locks).
  bool stale_locks = false;
  // Every node on one host (one host name, boot and pid namespace), each
  // incarnation with a pid of its own: a crashed incarnation's process is
  // gone, so its record and lease are dead at once (GuardOptions::
  // process_gone answered from the simulation), and a dead holder's lock is
  // ended by its token. Paused and cut-off nodes are alive.
  bool same_host = false;
  // With same_host: the host reboots this often per virtual minute: every
  // node's process ends at once, the boot id changes, the records and leases
  // stay in the store; a record of an earlier boot of this machine (same
  // machine id) is dead once it is overdue (docs/design/arguments.md, "A
  // holder of an earlier boot of this host").
  double reboots_per_minute = 0;
  // exclusive and auto: a store with native leases that claims, renews and
  // ends a lease in one request each (Capabilities::atomic_lease: Redis's
  // scripts, PostgreSQL's statements).
  bool atomic_lease = false;
  // Record every event of the run (for --trace).
  bool keep_log = false;
};

struct Overlap {
  Time start{0};
  Time duration{0};
  std::vector<std::string> holders;
};

struct RunResult {
  std::uint64_t seed = 0;
  std::uint64_t claims = 0;
  std::uint64_t losses = 0;
  std::uint64_t crashes = 0;
  std::uint64_t reboots = 0;
  std::uint64_t earlier_boot_ends = 0;  // locks ended as an earlier boot's
  std::uint64_t store_ops = 0;
  std::uint64_t events = 0;
  std::vector<Overlap> overlaps;  // intervals with two or more holders
  std::vector<Time> takeovers;    // crash of the holder -> next grant
  std::vector<Time> handovers;    // stand-down -> next grant
  std::uint64_t trace = 0;
  std::vector<std::string> log;  // with Config::keep_log
};

RunResult run_one(const Config& config, std::uint64_t seed);

// Whether the mode promises exclusion under this configuration: exclusive
// and auto always; verify while the lag stays within settle.
bool must_exclude(const Config& config);

}  // namespace instance::sim
