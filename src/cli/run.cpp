// `instance-guard run`: claim, start the child, forward signals, stand down.
// The command line is first resolved to a RunPlan (every setting, or the one
// error told); a Supervisor then claims, runs and watches the child, and
// stands down.
//
// Threads: the main thread only waits (poll on a signalfd and an eventfd).
// Its only timeouts are the claim's self-fencing deadline and --kill-after;
// each renewal posts the eventfd so the deadline is read again, and an idle
// guard wakes only at its renewals. The claim (or --wait) runs as a task of
// the guard's scheduler, so a signal can cancel it through its stop_token,
// and so does the stand-down, so that a signal or --stand-down-timeout ends
// the tool while the store does not answer. The scheduler has one worker:
// the claim, the upkeep after it, the renewals and the stand-down run on it
// in turn (the earliest due first), and it posts the loss of the claim to the
// eventfd. One worker is enough because the main thread wakes at the
// self-fencing deadline itself (Claim's accessors never wait for a store
// call) and stops the child on time even when the library's own check waits
// behind a renewal stuck in the store. A claim and its stand-down thus cost
// two threads, this one and the worker.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <expected>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "child.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "instance/guard.hpp"
#include "instance/liveness.hpp"
#include "instance/open_store.hpp"
#include "instance/sdk/credentials.hpp"
#include "instance/time.hpp"
#include "metrics.hpp"
#include "signals.hpp"

extern char** environ;

namespace instance::cli {

namespace {

using ClaimResult = std::expected<Claim, ClaimError>;

// The claim's outcome: the claim, or the exit code the tool ends with.
using ClaimOutcome = std::expected<Claim, int>;

// Who holds the store and until when, as log fields.
std::vector<LogField> holder_fields(const ClaimError& refusal, const Store& store) {
  std::vector<LogField> fields{{"store", store.describe()}};
  if (refusal.holder) {
    const auto& holder = *refusal.holder;
    fields.push_back({"holder_key", holder.key.str()});  // the file, whatever its name
    if (holder.record) {
      const Record& r = *holder.record;
      const auto left = r.expires_at - system_clock()->wall();
      fields.push_back({"holder_id", r.id});
      fields.push_back({"holder_host", r.host.empty() ? "unknown" : r.host});
      fields.push_back({"holder_pid", r.pid ? std::to_string(*r.pid) : "unknown"});
      fields.push_back({"expires_at", format_rfc3339(r.expires_at)});
      if (left.count() > 0) {
        fields.push_back(
            {"expires_in", format_duration(std::chrono::ceil<std::chrono::seconds>(left))});
      }
    } else {
      fields.push_back({"holder_record", "unreadable (counts as live)"});
    }
  }
  return fields;
}

// How the refusal is told: the library's message plus who holds the store and
// until when.
int report_refusal(const ClaimError& refusal, const Store& store, Logger& log) {
  log.log(LogLevel::error, refusal.error.message, holder_fields(refusal, store));
  return kExitTempFail;
}

// Ends the tool at once with `code`, without destructors (they would stand
// down and wait for the store); our record expires on its own.
[[noreturn]] void exit_now(int code) {
  std::fflush(nullptr);
  ::_exit(code);
}

// What --on-lost and --kill-after ask for.
struct LossPolicy {
  bool terminate = true;
  Duration kill_after = std::chrono::seconds(10);
};

// What the command line resolved to: everything `run` needs before it opens
// the store.
struct RunPlan {
  std::vector<std::string> command;  // the child's argv
  std::string url;                   // the store, unredacted
  // --ttl, --id, --mode, --max-skew, --settle, --startup-timeout; the logger
  // and the loss and renewal hooks are added when the guard is created.
  GuardOptions guard;
  std::optional<WaitOptions> wait;                    // --wait: its timeout (zero: forever)
  LossPolicy on_lost;                                 // --on-lost, --kill-after
  Duration stand_down_budget{};                       // --stand-down-timeout
  std::optional<std::filesystem::path> metrics_file;  // --metrics-file
};

// Tells why the command line could not be resolved; returns the exit code.
int report(const ConfigError& error, Logger& log) {
  log.error(error.message);
  return error.exit_code;
}

// `out` takes the resolved value; an error is passed on.
template <class T, class U>
Resolved<void> take(Resolved<T> resolved, U& out) {
  if (!resolved) return std::unexpected(std::move(resolved.error()));
  out = *std::move(resolved);
  return {};
}

// Like take(), for a setting that may be absent: `out` then keeps its default.
template <class T>
Resolved<void> take_if_set(Resolved<std::optional<T>> resolved, T& out) {
  if (!resolved) return std::unexpected(std::move(resolved.error()));
  if (*resolved) out = **resolved;
  return {};
}

// --ttl, the store URL, --mode, --max-skew, --settle and --id, in that order:
// the first error is the one told.
Resolved<void> resolve_guard(const RunArgs& args, const Getenv& getenv, RunPlan& plan) {
  GuardOptions& guard = plan.guard;
  const std::string name = command_basename(args.command.front());
  Resolved<void> ok = take_if_set(resolve_ttl(args.ttl, getenv), guard.ttl);
  if (ok) ok = take(resolve_store_url(args.store, name, getenv), plan.url);
  if (ok) ok = take(resolve_mode(args.mode, getenv), guard.mode);
  if (ok) ok = take(resolve_duration_flag(args.max_skew, "--max-skew"), guard.max_skew);
  if (ok) ok = take_if_set(resolve_duration_flag(args.settle, "--settle"), guard.settle);
  guard.id = resolve_id(args.id, getenv);
  guard.history = !args.no_history;
  if (ok && args.history_keep) {
    if (*args.history_keep < 1) {
      return std::unexpected(ConfigError{kExitUsage, "--history-keep must be at least 1"});
    }
    guard.history_keep = *args.history_keep;
  }
  return ok;
}

// --kill-after, --stand-down-timeout, --startup-timeout and --on-lost, in
// that order.
Resolved<void> resolve_budgets(const RunArgs& args, const Getenv& getenv, RunPlan& plan) {
  std::optional<Duration> kill_after;
  Resolved<void> ok =
      take(resolve_duration_flag(std::optional<std::string>(args.kill_after), "--kill-after"),
           kill_after);
  if (ok) {
    ok = take(resolve_stand_down_timeout(args.stand_down_timeout, getenv), plan.stand_down_budget);
  }
  if (ok) {
    ok = take(resolve_startup_timeout(args.startup_timeout, getenv), plan.guard.startup_timeout);
  }
  if (ok && args.on_lost != "terminate" && args.on_lost != "ignore") {
    return std::unexpected(ConfigError{
        kExitUsage, "--on-lost: expected terminate or ignore, got \"" + args.on_lost + "\""});
  }
  plan.on_lost = {args.on_lost == "terminate", kill_after.value_or(Duration{0})};
  return ok;
}

// --wait[=TIMEOUT]: nullopt without it; "" waits forever.
Resolved<std::optional<WaitOptions>> resolve_wait(const std::optional<std::string>& flag) {
  if (!flag) return std::nullopt;
  auto timeout = flag->empty() ? Resolved<std::optional<Duration>>(Duration{0})
                               : resolve_duration_flag(flag, "--wait");
  if (!timeout) {
    ConfigError error = std::move(timeout.error());
    error.message += "; write --wait=TIMEOUT, or put -- between the flags and the command";
    return std::unexpected(std::move(error));
  }
  WaitOptions wait;
  wait.timeout = timeout->value_or(Duration{0});
  return wait;
}

// What `args` and the environment ask `run` to do, or why that is unclear.
// --metrics-file: a file in a folder that exists (the file itself is written
// at the claim); nullopt without the flag.
Resolved<std::optional<std::filesystem::path>> resolve_metrics_file(
    const std::optional<std::string>& flag) {
  if (!flag) return std::nullopt;
  const std::filesystem::path path(*flag);
  if (flag->empty() || !path.has_filename()) {
    return std::unexpected(ConfigError{kExitUsage, "--metrics-file needs a file name"});
  }
  const std::filesystem::path folder = path.parent_path().empty() ? "." : path.parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    return std::unexpected(
        ConfigError{kExitConfig, "--metrics-file " + printable(*flag) + ": the folder " +
                                     printable(folder.string()) + " does not exist"});
  }
  return path;
}

Resolved<RunPlan> resolve_plan(const RunArgs& args, const Getenv& getenv) {
  if (args.command.empty()) {
    return std::unexpected(ConfigError{
        kExitUsage, "no command to run: instance-guard run [flags] -- COMMAND [ARGS...]"});
  }
  RunPlan plan{.command = args.command};
  Resolved<void> ok = resolve_guard(args, getenv, plan);
  if (ok) ok = resolve_budgets(args, getenv, plan);
  if (ok) ok = take(resolve_wait(args.wait), plan.wait);
  if (ok) ok = take(resolve_metrics_file(args.metrics_file), plan.metrics_file);
  if (!ok) return std::unexpected(std::move(ok.error()));
  return plan;
}

// --wait's options, telling whom the guard waits for; nullopt without --wait.
std::optional<WaitOptions> telling_waits(std::optional<WaitOptions> wait_options,
                                         const Store* store_ptr, Logger& log) {
  if (wait_options) {
    wait_options->on_wait = [&log, store_ptr,
                             timeout = wait_options->timeout](const ClaimError& holder) {
      auto fields = holder_fields(holder, *store_ptr);
      fields.push_back({"wait", timeout.count() > 0 ? format_duration(timeout) : "forever"});
      log.log(LogLevel::info, "waiting for the holder", fields);
    };
  }
  return wait_options;
}

// The child: the command, with the tool's environment plus the claim's id
// and epoch.
ChildSpec child_spec(const RunPlan& plan, const Claim& claim) {
  // The store's credentials stay with the guard: the child never sees them.
  auto environment = environment_without(environment_with(environ, "INSTANCE_GUARD_ID", claim.id()),
                                         credential_variables(plan.url));
  if (const auto epoch = claim.epoch()) {
    environment =
        environment_with(std::move(environment), "INSTANCE_GUARD_EPOCH", std::to_string(*epoch));
  }
  return ChildSpec{plan.command, std::move(environment)};
}

// Why the claim was lost, as the library's on_lost handler told it (set from
// the renewal thread; read by the main thread without touching the Claim).
class LossReport {
 public:
  void set(const Error& why) {
    std::lock_guard lock(mu_);
    if (!why_) why_ = why.message;
  }
  std::optional<std::string> get() const {
    std::lock_guard lock(mu_);
    return why_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<std::string> why_;
};

// What the main thread waits on: the forwarded signals, and a wake-up the
// guard's renewal thread posts when the claim is lost or renewed. Built first,
// before any thread exists, so that every thread inherits the blocked mask.
struct Events {
  const SignalSetup setup;
  SignalFd signals{setup};
  const Wakeup renewals;

  // The signals queued now that the tool acts on: neither SIGCHLD nor those
  // ignored when it started.
  std::vector<int> drain() {
    std::vector<int> acted_on;
    for (const int sig : signals.drain()) {
      if (sig != SIGCHLD && !setup.was_ignored(sig)) acted_on.push_back(sig);
    }
    return acted_on;
  }
};

// The claim and the stand-down, run in turn as tasks of the guard's
// scheduler while the main thread watches for signals, so they cost no
// thread of their own. Each job posts `done` when it returns. request_stop()
// reaches the running job's stop_token (the claim's); a later job sees it
// requested too and ignores it. settle() makes what the job wrote visible to
// the caller (the eventfd behind `done` is not a C++ synchronisation; this
// mutex is).
class Errands {
 public:
  explicit Errands(std::shared_ptr<Scheduler> scheduler) : scheduler_(std::move(scheduler)) {}
  Errands(const Errands&) = delete;
  Errands& operator=(const Errands&) = delete;

  const std::shared_ptr<Scheduler>& scheduler() const noexcept { return scheduler_; }

  // Runs `job` on the scheduler; returns at once. One job at a time: the
  // caller waits for `done` (and settle()) before posting the next.
  void post(std::function<void(std::stop_token)> job, const Wakeup& done) {
    {
      const std::lock_guard lock(mu_);
      busy_ = true;
    }
    scheduler_->schedule(Duration::zero(), [this, job = std::move(job), &done] {
      job(stop_.get_token());
      {
        const std::lock_guard lock(mu_);
        busy_ = false;
      }
      cv_.notify_all();
      done.notify();
    });
  }

  void request_stop() { stop_.request_stop(); }

  // After `done` was posted: returns once the job has finished (at once).
  void settle() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !busy_; });  // never waits: cleared before `done`
  }

 private:
  std::shared_ptr<Scheduler> scheduler_;
  std::stop_source stop_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;
};

// The main thread's part of `run`: claims, starts the child and watches it
// (signals, its exit, the loss of the claim), then stands down. The claim and
// the stand-down run on the guard's scheduler while the main thread watches
// for signals; one Supervisor runs one child.
class Supervisor {
 public:
  // The guard's scheduler has one worker (see the top of this file).
  Supervisor(Events& events, const RunPlan& plan, Logger& log)
      : events_(events), plan_(plan), log_(log), errands_(thread_scheduler(1)) {
    if (plan.metrics_file) metrics_.emplace(*plan.metrics_file, log);
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // The plan's guard options with the logger, and hooks that tell the main
  // thread of the loss of the claim and of each renewal. The Supervisor must
  // outlive the guard made from them.
  GuardOptions guard_options(std::shared_ptr<Logger> logger);

  // Claims (with --wait, waits for the holder to go: Guard::claim_waiting). A
  // forwarded signal meanwhile stops the attempt and stands down anything
  // already claimed; the tool then ends with 128+N. A second signal while the
  // store is still answering ends the tool at once. Returns the claim or the
  // exit code.
  ClaimOutcome claim(Guard& guard, const std::optional<WaitOptions>& wait);

  // Starts the child under `claim`, watches it to its end and stands down;
  // returns the tool's exit code (the child's status). A lost claim under
  // --on-lost=terminate ends the tool with 75 once the child has stopped.
  int run_child(Claim& claim, const ChildSpec& spec);

  // Stands the claim down on the guard's scheduler while the main thread watches
  // for signals, and returns once it is done. A signal meanwhile, or
  // --stand-down-timeout passing (a store that does not answer), ends the tool
  // at once with `exit_code`: the record then expires on its own.
  void stand_down(Claim& claim, int exit_code);

 private:
  std::optional<int> wait_for_claim(const Wakeup& done);
  ClaimOutcome claim_outcome(ClaimResult result, const Store& store);
  void wait_for_stand_down(const Wakeup& done, int exit_code, const std::string& expires_at);
  int watch(Child& child, const Claim& claim);
  void forward_signals(const Child& child);
  void notice_loss(const Child& child, std::optional<MonoTime> deadline, MonoTime now);
  void kill_if_due(const Child& child, MonoTime now);
  std::optional<MonoTime> next_wake(std::optional<MonoTime> deadline) const;
  [[noreturn]] void exit_lost(Claim& claim, int status);

  Events& events_;
  const RunPlan& plan_;
  Logger& log_;
  std::optional<MetricsFile> metrics_;  // --metrics-file
  LossReport loss_;
  std::optional<std::string> lost_;  // why the claim was lost, when it was
  std::optional<MonoTime> kill_at_;  // stopping the child: when SIGKILL follows
  bool killed_ = false;
  Errands errands_;  // the guard's scheduler: its last owner joins its workers
};

GuardOptions Supervisor::guard_options(std::shared_ptr<Logger> logger) {
  GuardOptions options = plan_.guard;
  options.logger = std::move(logger);
  options.scheduler = errands_.scheduler();
  // Runs on the renewal thread: only records why and wakes the main thread.
  options.on_lost = [this](const Error& why) {
    if (metrics_) metrics_->ended();
    loss_.set(why);
    events_.renewals.notify();
  };
  // The main thread re-reads the self-fencing deadline at each renewal, so it
  // never wakes up at the old deadline between renewals.
  options.on_renewal = [this](const RenewalReport& report) {
    if (metrics_) metrics_->renewed(report);
    if (report.renewed) events_.renewals.notify();
  };
  return options;
}

ClaimOutcome Supervisor::claim(Guard& guard, const std::optional<WaitOptions>& wait) {
  Wakeup done;
  std::optional<ClaimResult> result;
  errands_.post(
      [&](std::stop_token stop) {
        result.emplace(wait ? guard.claim_waiting(*wait, stop) : guard.claim(stop));
      },
      done);
  const std::optional<int> stopped_by = wait_for_claim(done);
  errands_.settle();

  if (stopped_by) {
    const int code = exit_code_for_signal(*stopped_by);
    if (result && result->has_value()) stand_down(**result, code);
    return std::unexpected(code);
  }
  return claim_outcome(std::move(*result), guard.store());
}

// Waits for the claim's job to finish; returns the signal that stopped it,
// if one did.
std::optional<int> Supervisor::wait_for_claim(const Wakeup& done) {
  std::optional<int> stopped_by;
  for (bool finished = false; !finished;) {
    const Ready ready = wait_for_events(events_.signals, done);
    finished = ready.wakeup && done.consume();
    // Signals first: one that arrives with the result still cancels the run.
    for (const int sig : events_.drain()) {
      if (!stopped_by) {
        stopped_by = sig;
        log_.info("signal during the claim; stopping it", {{"signal", signal_name(sig)}});
        errands_.request_stop();
      } else if (!finished) {
        log_.warn("second signal; exiting without waiting for the store",
                  {{"signal", signal_name(sig)}});
        exit_now(exit_code_for_signal(sig));
      }
    }
  }
  return stopped_by;
}

// The claim, or the exit code of its refusal or failure, told on the log.
ClaimOutcome Supervisor::claim_outcome(ClaimResult result, const Store& store) {
  if (result.has_value()) return std::move(*result);
  const ClaimError& error = result.error();
  if (error.error.code == Errc::another_instance) {
    return std::unexpected(report_refusal(error, store, log_));
  }
  log_.error(error.error.message,
             {{"store", store.describe()}, {"code", std::string(to_string(error.error.code))}});
  return std::unexpected(exit_code_for(error.error.code));
}

int Supervisor::run_child(Claim& claim, const ChildSpec& spec) {
  if (metrics_) metrics_->claimed(claim);
  auto child = Child::spawn(spec, events_.setup);
  if (!child) {
    log_.error(child.error().message);
    stand_down(claim, child.error().exit_code);
    return child.error().exit_code;
  }
  log_.debug("child started",
             {{"pid", std::to_string(child->pid())}, {"command", spec.argv.front()}});

  const int status = watch(*child, claim);
  if (const auto& failure = child->exec_failure()) {
    log_.error(*failure);  // it never ran: 127 or 126
  } else {
    if (lost_ && plan_.on_lost.terminate) exit_lost(claim, status);
    log_.info("child exited; standing down", {{"status", std::to_string(status)}});
  }
  stand_down(claim, status);
  return status;
}

// After the child stopped because the claim was lost: stands down if that
// cannot wait for the store, and ends the tool with 75.
void Supervisor::exit_lost(Claim& claim, int status) {
  log_.error("the claim was lost; the child was stopped",
             {{"reason", *lost_}, {"status", std::to_string(status)}});
  if (claim.status() == ClaimStatus::lost) {
    (void)claim.stand_down();  // never waits for the store once lost
  } else {
    // Our own deadline passed a moment before the library's: a renewal may
    // still hang in the store, and standing down would wait for it. The
    // record expires on its own.
    log_.warn("exiting without standing down; the record expires on its own");
  }
  exit_now(kExitTempFail);
}

// Forwards signals to the child's group until it ends; returns its status.
// Also wakes when the claim is lost (posted by on_lost) and at the claim's
// self-fencing deadline, which it re-reads after every wake-up; past that
// deadline the claim counts as lost even if the renewal that should have said
// so is stuck in the store.
int Supervisor::watch(Child& child, const Claim& claim) {
  for (;;) {
    forward_signals(child);
    if (auto status = child.poll_exit()) return *status;
    const MonoTime now = BootClock::now();
    const std::optional<MonoTime> deadline = claim.fence_deadline();
    if (!lost_) notice_loss(child, deadline, now);
    kill_if_due(child, now);
    if (wait_for_events(events_.signals, events_.renewals, next_wake(deadline)).wakeup) {
      events_.renewals.consume();
    }
  }
}

void Supervisor::forward_signals(const Child& child) {
  for (const int sig : events_.drain()) {
    log_.debug("forwarding signal",
               {{"signal", signal_name(sig)}, {"pgid", std::to_string(child.pid())}});
    child.signal_group(sig);
  }
}

// Notes the loss of the claim (told by the guard, or its self-fencing
// deadline passed) and stops the child (SIGTERM to its group, SIGKILL after
// --kill-after) unless --on-lost=ignore.
void Supervisor::notice_loss(const Child& child, std::optional<MonoTime> deadline, MonoTime now) {
  if (auto why = loss_.get()) {
    lost_ = *why;
  } else if (deadline && now >= *deadline) {
    lost_ =
        "no renewal succeeded by the self-fencing deadline (ttl - max-skew); the "
        "store is unreachable or not answering";
  }
  if (!lost_) return;
  if (metrics_) metrics_->ended();
  const LossPolicy& policy = plan_.on_lost;
  if (policy.terminate) {
    log_.error("claim lost; stopping the child",
               {{"reason", *lost_},
                {"pgid", std::to_string(child.pid())},
                {"kill_after", format_duration(policy.kill_after)}});
    child.signal_group(SIGTERM);
    kill_at_ = now + policy.kill_after;
  } else {
    log_.error("claim lost; the child keeps running (--on-lost=ignore)",
               {{"reason", *lost_}, {"pid", std::to_string(child.pid())}});
  }
}

void Supervisor::kill_if_due(const Child& child, MonoTime now) {
  if (!kill_at_ || killed_ || now < *kill_at_) return;
  log_.warn("the child did not stop within --kill-after; killing it",
            {{"pgid", std::to_string(child.pid())}});
  child.signal_group(SIGKILL);
  killed_ = true;
}

// Until when the watch may sleep: no periodic wake-ups, only until the
// deadline that matters next (nullopt: none). On the BootClock, so a tool
// stopped or suspended past it acts the moment it runs again.
std::optional<MonoTime> Supervisor::next_wake(std::optional<MonoTime> deadline) const {
  if (kill_at_ && !killed_) return kill_at_;
  if (!lost_ && deadline) return deadline;
  return std::nullopt;
}

void Supervisor::stand_down(Claim& claim, int exit_code) {
  if (metrics_) metrics_->ended();  // the claim is given up from here on
  const std::string expires_at = format_rfc3339(claim.record().expires_at);
  const Wakeup done;
  Result<void> result;
  errands_.post([&](std::stop_token) { result = claim.stand_down(); }, done);
  wait_for_stand_down(done, exit_code, expires_at);
  errands_.settle();
  if (!result) {
    log_.warn("stand down failed; the record expires on its own",
              {{"error", result.error().message}, {"expires_at", expires_at}});
  }
}

// Returns once the stand-down's job posts `done`; ends the tool with
// `exit_code` at a signal or when --stand-down-timeout passes first.
void Supervisor::wait_for_stand_down(const Wakeup& done, int exit_code,
                                     const std::string& expires_at) {
  const Duration budget = plan_.stand_down_budget;
  const MonoTime deadline = BootClock::now() + budget;
  for (;;) {
    const Ready ready = wait_for_events(events_.signals, done, deadline);
    if (ready.wakeup && done.consume()) return;
    for (const int sig : events_.drain()) {
      log_.warn("signal during stand-down; exiting without waiting for the store",
                {{"signal", signal_name(sig)}, {"expires_at", expires_at}});
      exit_now(exit_code);
    }
    if (BootClock::now() >= deadline) {
      log_.warn(
          "stand-down did not finish within --stand-down-timeout; exiting, the record "
          "expires on its own",
          {{"stand_down_timeout", format_duration(budget)}, {"expires_at", expires_at}});
      exit_now(exit_code);
    }
  }
}

}  // namespace

int run_command(const RunArgs& args, const std::shared_ptr<Logger>& logger) {
  Events events;  // first, before any thread exists: every thread inherits the blocked mask
  Logger& log = *logger;

  auto plan = resolve_plan(args, process_environment());
  if (!plan) return report(plan.error(), log);

  auto store = open_store(plan->url, open_options(args.store, logger));
  if (!store) {
    log.error(store.error().message, {{"store", redact_url(plan->url)}});
    return exit_code_for(store.error().code);
  }
  const auto* store_ptr = store->get();
  const std::optional<WaitOptions> wait_options = telling_waits(plan->wait, store_ptr, log);

  Supervisor supervisor(events, *plan, log);
  auto guard = Guard::create(*store, supervisor.guard_options(logger));
  if (!guard) {
    log.error(guard.error().message);
    return guard.error().code == Errc::invalid ? kExitConfig : exit_code_for(guard.error().code);
  }

  // Held from before our record is written until we exit; the child and its
  // descendants inherit it, so our record still counts as live on this host
  // while any of them runs, even once this process is gone.
  auto liveness = LivenessLock::hold();
  if (!liveness) {
    log.warn("a guard on this host may take over while processes we started still run",
             {{"error", liveness.error().message}});
  }

  auto claim = supervisor.claim(*guard, wait_options);
  if (!claim) return claim.error();
  return supervisor.run_child(*claim, child_spec(*plan, *claim));
}

}  // namespace instance::cli
