// instance-guard-bench: the in-process half of the benchmark harness
// (bench/run.sh drives it; BENCHMARKS.md shows what it measures).
//
//   instance-guard-bench store --name NAME --url URL [--modes a,b] [--stale 0,1,10]
//                              [--rounds N] [--check]
//     For each mode on the store at URL:
//       requests  store calls per claim, renewal and release, counted by a
//                 CountingStore, with 0 and with k stale records; compared
//                 with what the protocol must cost (exact, deterministic).
//                 --check exits 1 when a count differs from that.
//       latency   median claim latency over N rounds, divided by the median
//                 latency of one bare request (a get of a small document) to
//                 the same store in the same rounds; once per stale count.
//   instance-guard-bench idle --bin PATH --store URL [--ttl D] [--seconds S] [--mode M]
//     Runs `PATH run --store URL --ttl D --mode M -- sleep ...`, samples /proc every
//     2 ms, and reports the guard's peak RSS, CPU time per renewal and the
//     wake-ups (context switches) that happened between renewals.
//
// Output: one JSON object per line on stdout (bench/run.sh turns them into
// tables); a readable summary on stderr.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "instance/guard.hpp"
#include "instance/history.hpp"
#include "instance/open_store.hpp"
#include "instance/record.hpp"
#include "instance/stores/counting.hpp"
#include "instance/testing.hpp"
#include "instance/time.hpp"

namespace instance::bench {
namespace {

using json = nlohmann::ordered_json;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void usage_error(const std::string& why) {
  std::cerr << "instance-guard-bench: " << why << "\n"
            << "usage: instance-guard-bench store --name NAME --url URL [--modes LIST] "
               "[--stale LIST] [--rounds N] [--check]\n"
               "       instance-guard-bench idle --bin PATH --store URL [--ttl D] [--seconds S] "
               "[--name NAME] [--mode MODE]\n";
  std::exit(64);
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(sep, start), text.size());
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int to_int(std::string_view text, std::string_view what) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size() || v < 0) {
    usage_error(std::string(what) + ": not a number: " + std::string(text));
  }
  return v;
}

// --flag VALUE pairs and bare --switches.
struct Args {
  std::map<std::string, std::string> values;
  std::vector<std::string> switches;
  std::string get(const std::string& key, const std::string& fallback = "") const {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
  bool has(const std::string& s) const { return std::ranges::find(switches, s) != switches.end(); }
};

Args parse_args(int argc, char** argv, const std::vector<std::string>& with_value) {
  Args args;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (std::ranges::find(with_value, a) != with_value.end()) {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      args.values[a] = argv[++i];
    } else if (a.starts_with("--")) {
      args.switches.push_back(a);
    } else {
      usage_error("unexpected argument " + a);
    }
  }
  return args;
}

Key K(std::string_view s) { return Key::parse(s).value(); }

double micros(steady::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::ranges::sort(v);
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

json counts_json(const RequestCounts& c) {
  json j = json::object();
  for (int i = 0; i < kStoreOpCount; ++i) {
    if (c.by_op[static_cast<std::size_t>(i)] == 0) continue;
    j[std::string(to_string(static_cast<StoreOp>(i)))] = c.by_op[static_cast<std::size_t>(i)];
  }
  return j;
}

// ---- The store under test ------------------------------------------------

// Removes every instance record, the lease document and the probe folder, so
// each case starts from an empty store.
void clear(Store& store) {
  for (const char* prefix : {"instances", "instances.probe", "history"}) {
    if (auto keys = store.list(K(prefix))) {
      for (const Key& k : *keys) (void)store.remove(k);
    }
  }
  (void)store.remove(K("instances.lease"));
}

std::string stale_id(int i) { return "bench-stale-" + std::to_string(i); }

// A record of another host's instance that expired an hour before `now`.
std::string stale_record(int i, WallTime now) {
  return encode_record(Record{.id = stale_id(i),
                              .started_at = now - 2h,
                              .expires_at = now - 1h,
                              .host = "bench-elsewhere",
                              .pid = 4242,
                              .renewed_at = now - 2h});
}

// Makes exactly `n` stale records exist (rewriting those a claim removed).
void ensure_stale(Store& store, int n, WallTime now) {
  std::vector<bool> present(static_cast<std::size_t>(n), false);
  if (auto keys = store.list(records_prefix())) {
    for (const Key& k : *keys) {
      const std::string leaf = k.leaf();
      if (!leaf.starts_with("bench-stale-")) continue;
      int i = -1;
      std::from_chars(leaf.data() + 12, leaf.data() + leaf.size(), i);
      if (i >= 0 && i < n) present[static_cast<std::size_t>(i)] = true;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (present[static_cast<std::size_t>(i)]) continue;
    if (auto w = store.replace(*record_key(stale_id(i)), stale_record(i, now)); !w) {
      throw std::runtime_error("cannot write a stale record: " + w.error().message);
    }
  }
}

// ---- Requests: what each mode must cost ----------------------------------

// The store calls a phase must make, by protocol (src/guard/*.cpp), given
// the store's capabilities and `n` stale records of other hosts present.
// Categories, so that create vs replace (first lease vs later) do not matter.
struct Expected {
  std::uint64_t lists = 0, gets = 0, writes = 0, removes = 0, lock_ops = 0, batches = 0;
  std::uint64_t prefix_reads = 0;  // get_all: a listing with its reads
  // claim_lease, renew_lease and end_lease on a store with atomic_lease:
  // each one request, whatever it reads and writes.
  std::uint64_t leases = 0;
  std::uint64_t total() const {
    return lists + gets + writes + removes + lock_ops + batches + prefix_reads + leases;
  }
};

// A scan of `k` listed records (src/guard/records.cpp, scan_others): one
// get_all with prefix_reads; else the listing and one get each, or with
// batch_reads one get_many per 64 (kReadBatch).
Expected scan(const Capabilities& caps, std::uint64_t k) {
  if (caps.prefix_reads) return {.prefix_reads = 1};
  if (caps.batch_reads) return {.lists = 1, .batches = (k + 63) / 64};
  return {.lists = 1, .gets = k};
}

Expected operator+(Expected a, const Expected& b) {
  a.lists += b.lists;
  a.gets += b.gets;
  a.writes += b.writes;
  a.removes += b.removes;
  a.lock_ops += b.lock_ops;
  a.batches += b.batches;
  a.prefix_reads += b.prefix_reads;
  a.leases += b.leases;
  return a;
}

Expected expected(std::string_view phase, Mode mode, const Capabilities& caps, std::uint64_t n) {
  const bool cond = caps.conditional_writes;
  // exclusive on a store that takes, renews and ends its lease in one
  // request (atomic_lease): the lock, the lease document, our record and
  // (at the claim) the scan's reads are all in that request.
  const bool atomic = mode == Mode::exclusive && caps.native_lease && caps.atomic_lease;
  // Stale records are reaped by announce always (blindly where the store has
  // no conditional delete: the original's behaviour), by the other modes
  // only with a conditional delete. Either waits for the upkeep after the
  // claim, where a blind delete reads its record again first.
  const bool blind = mode == Mode::announce && !cond;
  Expected e;
  if (phase == "history") {  // the upkeep after the claim: our tenure, stale records, history/
    e = {.lists = 1, .gets = blind ? n : 0, .writes = 1, .removes = cond || blind ? n : 0};
  } else if (phase == "claim") {
    switch (mode) {
      case Mode::announce:  // list, read each, write
        e = Expected{.writes = 1} + scan(caps, n);
        break;
      case Mode::verify:  // scan, write claiming, scan again, rewrite held
        // The second scan reads what its listing shows: the stale records,
        // still there, and our own claiming record (skipped by its id once
        // read).
        e = Expected{.writes = 2} + scan(caps, n) + scan(caps, n + 1);
        break;
      default:  // exclusive
        if (atomic) {
          e = {.leases = 1};
        } else if (caps.native_lease) {  // lock, read lease, scan, write lease, write record
          e = Expected{.gets = 1, .writes = 2, .lock_ops = 1} + scan(caps, n);
        } else {  // read lease, scan, compare-and-set lease, write record
          e = Expected{.gets = 1, .writes = 2} + scan(caps, n);
        }
    }
  } else if (phase == "renew") {
    switch (mode) {
      case Mode::announce:  // rewrite ours
        e = {.writes = 1};
        break;
      case Mode::verify:  // rewrite ours, scan for a collision (ours read too)
        e = Expected{.writes = 1} + scan(caps, (cond ? 0 : n) + 1);
        break;
      default:  // [refresh lock,] lease, record
        e = atomic ? Expected{.leases = 1}
                   : Expected{.writes = 2, .lock_ops = caps.native_lease ? 1u : 0u};
    }
  } else {  // release
    if (atomic) {
      e = {.leases = 1};
    } else if (mode == Mode::exclusive) {  // lease marked released, [unlock,] record removed
      e = {.writes = 1, .removes = 1, .lock_ops = caps.native_lease ? 1u : 0u};
    } else {
      e = {.removes = 1};
    }
    e.writes += 1;  // the tenure, closed
  }
  return e;
}

bool matches(const RequestCounts& c, const Expected& e) {
  return c[StoreOp::list] == e.lists && c[StoreOp::get] == e.gets && c.writes() == e.writes &&
         c.removes() == e.removes && c.lock_ops() == e.lock_ops &&
         c[StoreOp::get_many] == e.batches && c[StoreOp::get_all] == e.prefix_reads &&
         c[StoreOp::claim_lease] + c[StoreOp::renew_lease] + c[StoreOp::end_lease] == e.leases;
}

struct Case {
  std::string store_name;
  Mode mode;
  std::shared_ptr<Store> store;
};

json base(const Case& c, std::string_view kind) {
  json j;
  j["store"] = c.store_name;
  j["mode"] = std::string(to_string(c.mode));
  j["kind"] = std::string(kind);
  return j;
}

// Counts one claim, one renewal (driven by a manual scheduler) and one
// release with `n` stale records present. Returns false when a count is not
// what the protocol must cost.
bool count_requests(const Case& c, const Capabilities& caps, int n, bool first_lease) {
  auto clock = std::make_shared<FakeClock>();
  auto scheduler = std::make_shared<ManualScheduler>(clock);
  auto counting = make_counting_store(c.store);
  const Duration ttl = 30s;
  auto guard = Guard::create(counting, {.ttl = ttl,
                                        .id = "bench-self",
                                        .clock = clock,
                                        .scheduler = scheduler,
                                        .mode = c.mode,
                                        .check_lag = false});
  if (!guard) throw std::runtime_error(guard.error().message);
  if (first_lease) clear(*c.store);
  ensure_stale(*c.store, n, clock->wall());
  // Earlier runs' tenures: none to prune, so the history's upkeep is one
  // listing (pruning is measured by its own tests).
  if (auto old = c.store->list(history_prefix())) {
    for (const Key& k : *old) (void)c.store->remove(k);
  }

  bool ok = true;
  auto report = [&](std::string_view phase, const RequestCounts& got) {
    const Expected want = expected(phase, c.mode, caps, static_cast<std::uint64_t>(n));
    const bool same = matches(got, want);
    ok = ok && same;
    json j = base(c, "requests");
    j["phase"] = std::string(phase);
    j["stale"] = n;
    j["lease"] = first_lease ? "absent" : "released";
    j["counts"] = counts_json(got);
    j["total"] = got.total();
    j["expected_total"] = want.total();
    j["as_expected"] = same;
    std::cout << j.dump() << std::endl;
    std::cerr << c.store_name << " " << to_string(c.mode) << " " << phase << " (stale " << n
              << "): " << got.str() << (same ? "" : "  <-- NOT AS EXPECTED") << "\n";
  };

  counting->reset();
  auto claim = guard->claim();
  if (!claim) throw std::runtime_error("claim failed: " + claim.error().error.message);
  report("claim", counting->counts());
  // The upkeep, due at once after the claim, off its path: the stale records
  // it proved stale removed, the history kept.
  counting->reset();
  scheduler->advance(0s);
  report("history", counting->counts());
  // The renewal sees the store as the claim left it (stale records reaped
  // where the mode reaps them).
  counting->reset();
  scheduler->advance(ttl / 3);
  if (!claim->active()) throw std::runtime_error("the claim was lost at its first renewal");
  report("renew", counting->counts());
  counting->reset();
  if (auto down = claim->stand_down(); !down) {
    throw std::runtime_error("stand down failed: " + down.error().message);
  }
  report("release", counting->counts());
  return ok;
}

// verify's visibility self-test (once per guard, before its first claim).
void count_lag_check(const Case& c) {
  auto counting = make_counting_store(c.store);
  auto guard =
      Guard::create(counting, {.ttl = 30s, .id = "bench-self", .mode = c.mode, .check_lag = true});
  if (!guard) throw std::runtime_error(guard.error().message);
  clear(*c.store);
  auto claim = guard->claim();
  if (!claim) throw std::runtime_error("claim failed: " + claim.error().error.message);
  const RequestCounts with_check = counting->counts();
  (void)claim->stand_down();
  json j = base(c, "lag_check");
  j["counts"] = counts_json(with_check);
  j["total"] = with_check.total();
  std::cout << j.dump() << std::endl;
}

// ---- Latency --------------------------------------------------------------

// A scheduler that only keeps its tasks: a measured claim lasts far less
// than its first renewal, and the upkeep it schedules at once runs in its
// stand-down (which runs a pending upkeep after the release), never beside
// the next round's claim, whose time it would otherwise share.
class HeldTasks final : public Scheduler {
 public:
  TaskId schedule(Duration, std::function<void()> task) override {
    tasks_.emplace(++last_, std::move(task));
    return last_;
  }
  bool cancel(TaskId id) override { return tasks_.erase(id) > 0; }

 private:
  TaskId last_ = 0;
  std::map<TaskId, std::function<void()>> tasks_;
};

void measure_latency(const Case& c, int n, int rounds) {
  auto guard = Guard::create(
      c.store,
      {.ttl = 60s, .id = "bench-self", .scheduler = std::make_shared<HeldTasks>(), .mode = c.mode});
  if (!guard) throw std::runtime_error(guard.error().message);
  clear(*c.store);
  const Key bare_key = K("bench/bare");
  if (auto w = c.store->replace(bare_key, "{\"bare\":true}"); !w) {
    throw std::runtime_error("cannot write " + bare_key.str() + ": " + w.error().message);
  }
  // Warm up: the connection, verify's self-test, the lease document.
  for (int i = 0; i < 2; ++i) {
    auto warm = guard->claim();
    if (!warm) throw std::runtime_error("claim failed: " + warm.error().error.message);
    (void)warm->stand_down();
  }
  // A claim writes, so it is also set against one bare write: on a server
  // that syncs each write (Redis here: appendfsync always) a write costs
  // its sync, which no claim can avoid.
  std::vector<double> bare, bare_writes, claims;
  for (int r = 0; r < rounds; ++r) {
    ensure_stale(*c.store, n, system_clock()->wall());
    auto t0 = steady::now();
    auto got = c.store->get(bare_key);
    auto t1 = steady::now();
    if (!got) throw std::runtime_error("bare get failed: " + got.error().message);
    bare.push_back(micros(t1 - t0));
    t0 = steady::now();
    auto put = c.store->replace(bare_key, "{\"bare\":true}");
    t1 = steady::now();
    if (!put) throw std::runtime_error("bare write failed: " + put.error().message);
    bare_writes.push_back(micros(t1 - t0));
    t0 = steady::now();
    auto claim = guard->claim();
    t1 = steady::now();
    if (!claim) throw std::runtime_error("claim failed: " + claim.error().error.message);
    claims.push_back(micros(t1 - t0));
    (void)claim->stand_down();
  }
  json j = base(c, "latency");
  j["stale"] = n;
  j["rounds"] = rounds;
  j["bare_us"] = median(bare);
  j["claim_us"] = median(claims);
  j["ratio"] = median(bare) > 0 ? median(claims) / median(bare) : 0.0;
  j["bare_write_us"] = median(bare_writes);
  j["write_ratio"] = median(bare_writes) > 0 ? median(claims) / median(bare_writes) : 0.0;
  std::cout << j.dump() << std::endl;
  std::cerr << c.store_name << " " << to_string(c.mode) << " latency (stale " << n << "): claim "
            << j["claim_us"].get<double>() << " us, bare " << j["bare_us"].get<double>()
            << " us, ratio " << j["ratio"].get<double>() << "; bare write "
            << j["bare_write_us"].get<double>() << " us, ratio " << j["write_ratio"].get<double>()
            << "\n";
}

int store_command(int argc, char** argv) {
  const Args args = parse_args(argc, argv, {"--name", "--url", "--modes", "--stale", "--rounds"});
  const std::string name = args.get("--name");
  const std::string url = args.get("--url");
  if (name.empty() || url.empty()) usage_error("store needs --name and --url");
  std::vector<int> stale;
  for (const auto& s : split(args.get("--stale", "0,1,10,100,1000"), ',')) {
    stale.push_back(to_int(s, "--stale"));
  }
  const int rounds = to_int(args.get("--rounds", "20"), "--rounds");
  const bool check = args.has("--check");

  auto store = open_store(url);
  if (!store) {
    std::cerr << "cannot open " << url << ": " << store.error().message << "\n";
    return store.error().code == Errc::invalid ? 78 : 69;  // 78: a scheme not in this build
  }
  const Capabilities caps = (*store)->capabilities();
  {
    json j;
    j["store"] = name;
    j["kind"] = "store";
    j["describe"] = (*store)->describe();
    j["conditional_writes"] = caps.conditional_writes;
    j["native_lease"] = caps.native_lease;
    auto g = Guard::create(*store, {.mode = Mode::automatic});
    if (g) {
      if (auto m = g->resolve_mode()) j["auto"] = std::string(to_string(*m));
    }
    std::cout << j.dump() << std::endl;
  }

  bool ok = true;
  for (const auto& mode_name : split(args.get("--modes", "announce,verify,exclusive"), ',')) {
    auto mode = parse_mode(mode_name);
    if (!mode) usage_error(mode.error().message);
    Case c{name, *mode, *store};
    auto g = Guard::create(*store, {.mode = *mode});
    Result<Mode> resolved = g ? g->resolve_mode() : Result<Mode>(std::unexpected(g.error()));
    json j = base(c, "mode");
    j["supported"] = resolved.has_value();
    if (!resolved) {
      j["why"] = resolved.error().message;
      std::cout << j.dump() << std::endl;
      std::cerr << name << " " << mode_name << ": not supported here\n";
      continue;
    }
    j["resolved"] = std::string(to_string(*resolved));
    std::cout << j.dump() << std::endl;
    c.mode = *resolved;
    try {
      ok = count_requests(c, caps, 0, true) && ok;   // lease absent (first claim ever)
      ok = count_requests(c, caps, 0, false) && ok;  // lease released (every later claim)
      const int some = stale.size() > 1 ? std::min(10, *std::ranges::max_element(stale)) : 0;
      if (some > 0) ok = count_requests(c, caps, some, false) && ok;
      if (c.mode == Mode::verify) count_lag_check(c);
      for (int n : stale) {
        // Fewer rounds for the big cases: every round rewrites the stale records.
        const int r = n >= 1000  ? std::max(3, rounds / 5)
                      : n >= 100 ? std::max(3, rounds / 2)
                                 : rounds;
        measure_latency(c, n, r);
      }
      clear(*store.value());
    } catch (const std::exception& e) {
      std::cerr << name << " " << mode_name << ": " << e.what() << "\n";
      ok = false;
    }
  }
  if (check && !ok) {
    std::cerr << "FAIL: some request counts differ from what the protocol must cost\n";
    return 1;
  }
  return 0;
}

// ---- Idle cost of `instance-guard run` ------------------------------------

struct ProcSample {
  std::uint64_t switches = 0;               // voluntary + nonvoluntary, all threads
  std::uint64_t cpu_ns = 0;                 // schedstat run time, all threads
  std::map<int, std::uint64_t> per_thread;  // tid -> switches
};

std::optional<ProcSample> sample(pid_t pid) {
  ProcSample s;
  std::error_code ec;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream status(entry.path() / "status");
    std::string line;
    std::uint64_t n = 0;
    while (std::getline(status, line)) {
      if (line.starts_with("voluntary_ctxt_switches:") ||
          line.starts_with("nonvoluntary_ctxt_switches:")) {
        n += std::stoull(line.substr(line.find(':') + 1));
      }
    }
    std::ifstream schedstat(entry.path() / "schedstat");
    std::uint64_t run_ns = 0;
    schedstat >> run_ns;
    s.switches += n;
    s.cpu_ns += run_ns;
    s.per_thread[std::stoi(entry.path().filename().string())] = n;
  }
  if (ec) return std::nullopt;
  return s;
}

// A "Name:   123 kB" field of /proc/PID/status, in KiB (0 when absent).
std::uint64_t status_kib(pid_t pid, std::string_view field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':') {
      return std::stoull(line.substr(field.size() + 1));
    }
  }
  return 0;
}

int idle_command(int argc, char** argv) {
  const Args args =
      parse_args(argc, argv, {"--bin", "--store", "--ttl", "--seconds", "--name", "--mode"});
  const std::string mode = args.get("--mode", "auto");
  const std::string bin = args.get("--bin");
  const std::string url = args.get("--store");
  const std::string name = args.get("--name", "store");
  const std::string ttl_text = args.get("--ttl", "3s");
  const int seconds = to_int(args.get("--seconds", "10"), "--seconds");
  if (bin.empty() || url.empty()) usage_error("idle needs --bin and --store");
  auto ttl = parse_duration(ttl_text);
  if (!ttl) usage_error("--ttl: " + ttl.error().message);

  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return 70;
  const std::string sleep_for = std::to_string(seconds + 30);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(err_pipe[1], 2);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    execl(bin.c_str(), bin.c_str(), "run", "--store", url.c_str(), "--ttl", ttl_text.c_str(),
          "--id", "bench-idle", "--mode", mode.c_str(), "--log-level", "debug", "--", "sleep",
          sleep_for.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);

  // Reads the guard's log as it comes; returns how many new "renewed" lines.
  std::string pending, log_text;
  bool child_started = false;
  auto read_log = [&]() {
    int renewed = 0;
    char buf[4096];
    for (ssize_t r; (r = ::read(err_pipe[0], buf, sizeof buf)) > 0;) {
      pending.append(buf, static_cast<std::size_t>(r));
    }
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      log_text += line + "\n";
      if (line.find("debug: renewed ") != std::string::npos) ++renewed;
      if (line.find("child started") != std::string::npos) child_started = true;
    }
    return renewed;
  };

  auto finish = [&](int code) {
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    read_log();
    if (code != 0) std::cerr << "guard log:\n" << log_text;
    return code;
  };

  const auto start_deadline = steady::now() + 10s;
  while (!child_started) {
    read_log();
    if (steady::now() > start_deadline) {
      std::cerr << "the guard's child did not start within 10 s\n";
      return finish(1);
    }
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(200ms);  // let start-up settle
  read_log();

  // Sample every 2 ms. A burst is a run of samples in which some thread
  // switched, with gaps under 20 ms; a burst during which a "renewed" line
  // appeared (or within 20 ms after it) is a renewal, any other burst is a
  // wake-up between renewals.
  struct Burst {
    steady::time_point begin, end;
    std::uint64_t switches = 0;
    std::vector<int> threads;
    bool renewal = false;
  };
  std::vector<Burst> bursts;
  std::vector<steady::time_point> renewals;
  auto first = sample(pid);
  if (!first) return finish(1);
  ProcSample prev = *first;
  const auto t_begin = steady::now();
  const auto t_end = t_begin + std::chrono::seconds(seconds);
  while (steady::now() < t_end) {
    std::this_thread::sleep_for(2ms);
    const auto now = steady::now();
    for (int n = read_log(); n > 0; --n) renewals.push_back(now);
    auto cur = sample(pid);
    if (!cur) break;
    if (cur->switches != prev.switches) {
      if (bursts.empty() || now - bursts.back().end > 20ms) bursts.push_back({now, now});
      Burst& b = bursts.back();
      b.end = now;
      b.switches += cur->switches - prev.switches;
      for (const auto& [tid, n] : cur->per_thread) {
        auto it = prev.per_thread.find(tid);
        if ((it == prev.per_thread.end() || it->second != n) &&
            std::ranges::find(b.threads, tid) == b.threads.end()) {
          b.threads.push_back(tid);
        }
      }
    }
    prev = *cur;
  }
  const ProcSample last = prev;
  // Peak RSS counts every page mapped in, shared library code included;
  // RssAnon is the guard's own memory, RssFile mostly shared libraries.
  const std::uint64_t rss = status_kib(pid, "VmHWM");
  const std::uint64_t rss_anon = status_kib(pid, "RssAnon");
  const std::uint64_t rss_file = status_kib(pid, "RssFile");
  // A renewal's work (a few store calls) comes before its "renewed" line: a
  // burst that ends at most 250 ms before such a line, or starts at most
  // 20 ms after it, belongs to that renewal.
  for (auto& b : bursts) {
    for (auto r : renewals) {
      if (b.end >= r - 250ms && b.begin <= r + 20ms) b.renewal = true;
    }
  }
  const auto between = std::ranges::count_if(bursts, [](const Burst& b) { return !b.renewal; });
  std::uint64_t between_switches = 0;
  std::vector<int> between_threads;
  for (const auto& b : bursts) {
    if (b.renewal) continue;
    between_switches += b.switches;
    for (int t : b.threads) {
      if (std::ranges::find(between_threads, t) == between_threads.end())
        between_threads.push_back(t);
    }
  }
  const auto n_renewals = renewals.size();
  json j;
  j["store"] = name;
  j["kind"] = "idle";
  j["mode"] = mode;
  j["ttl"] = ttl_text;
  j["seconds"] = seconds;
  j["renewals"] = n_renewals;
  j["peak_rss_kib"] = rss;
  j["rss_anon_kib"] = rss_anon;
  j["rss_file_kib"] = rss_file;
  j["cpu_us_total"] = static_cast<double>(last.cpu_ns - first->cpu_ns) / 1000.0;
  j["cpu_us_per_renewal"] =
      n_renewals ? static_cast<double>(last.cpu_ns - first->cpu_ns) / 1000.0 / n_renewals : 0.0;
  j["switches"] = last.switches - first->switches;
  j["bursts"] = bursts.size();
  j["wakeups_between_renewals"] = between;
  j["switches_between_renewals"] = between_switches;
  j["threads"] = last.per_thread.size();
  j["threads_waking_between"] = between_threads.size();
  // Which thread woke between renewals: the main thread has tid == pid.
  j["main_thread_wakes_between"] = std::ranges::find(between_threads, pid) != between_threads.end();
  std::cout << j.dump() << std::endl;
  std::cerr << name << " idle (ttl " << ttl_text << ", " << seconds << " s): " << n_renewals
            << " renewals, peak RSS " << rss << " KiB, " << j["cpu_us_per_renewal"].get<double>()
            << " us CPU per renewal, " << between << " wake-ups between renewals\n";
  return finish(n_renewals == 0 ? 1 : 0);
}

}  // namespace
}  // namespace instance::bench

int main(int argc, char** argv) {
  if (argc < 2) instance::bench::usage_error("no command");
  const std::string cmd = argv[1];
  if (cmd == "store") return instance::bench::store_command(argc, argv);
  if (cmd == "idle") return instance::bench::idle_command(argc, argv);
  instance::bench::usage_error("unknown command " + cmd);
}
