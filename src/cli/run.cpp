// `instance-guard run`: claim, start the child, forward signals, stand down.
//
// Threads: the main thread only waits (poll on a signalfd and an eventfd, no
// timeout); the claim runs on a worker thread so a signal can cancel it
// through its stop_token; renewals run on the guard's scheduler thread.

#include <unistd.h>

#include <thread>

#include "child.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "instance/guard.hpp"
#include "instance/open_store.hpp"
#include "instance/time.hpp"
#include "signals.hpp"

extern char** environ;

namespace instance::cli {

namespace {

using ClaimResult = std::expected<Claim, ClaimError>;

// The claim's outcome: the claim, or the exit code the tool ends with.
using ClaimOutcome = std::expected<Claim, int>;

// How the refusal is told: the library's message plus who holds the store and
// until when.
int report_refusal(const ClaimError& refusal, const Store& store, Logger& log) {
  std::vector<LogField> fields{{"store", store.describe()}};
  if (refusal.holder) {
    const auto& holder = *refusal.holder;
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
      fields.push_back({"holder_key", holder.key.str()});
      fields.push_back({"holder_record", "unreadable (counts as live)"});
    }
  }
  log.log(LogLevel::error, refusal.error.message, fields);
  return kExitTempFail;
}

// Claims on a worker thread while the main thread watches for signals. A
// forwarded signal during the claim stops the attempt and stands down
// anything already claimed; the tool then ends with 128+N. A second signal
// while the store is still answering ends the tool at once.
ClaimOutcome claim_watching_signals(Guard& guard, const SignalSetup& setup, SignalFd& signals,
                                    Logger& log) {
  Wakeup done;
  std::optional<ClaimResult> result;
  std::jthread worker([&](std::stop_token stop) {
    result.emplace(guard.claim(stop));
    done.notify();
  });

  std::optional<int> stopped_by;
  for (bool finished = false; !finished;) {
    const Ready ready = wait_for_events(signals, done);
    finished = ready.wakeup && done.consume();
    // Signals first: one that arrives with the result still cancels the run.
    for (const int sig : signals.drain()) {
      if (sig == SIGCHLD || setup.was_ignored(sig)) continue;
      if (!stopped_by) {
        stopped_by = sig;
        log.info("signal during the claim; stopping it", {{"signal", signal_name(sig)}});
        worker.request_stop();
      } else if (!finished) {
        log.warn("second signal; exiting without waiting for the store",
                 {{"signal", signal_name(sig)}});
        ::_exit(exit_code_for_signal(sig));
      }
    }
  }
  worker.join();

  if (stopped_by) {
    if (result && result->has_value()) {
      if (auto down = (*result)->stand_down(); !down) {
        log.warn("stand down failed", {{"error", down.error().message}});
      }
    }
    return std::unexpected(exit_code_for_signal(*stopped_by));
  }
  if (result->has_value()) return std::move(**result);
  const ClaimError& error = result->error();
  if (error.error.code == Errc::another_instance) {
    return std::unexpected(report_refusal(error, guard.store(), log));
  }
  log.error(error.error.message, {{"store", guard.store().describe()},
                                  {"code", std::string(to_string(error.error.code))}});
  return std::unexpected(exit_code_for(error.error.code));
}

// Forwards signals to the child's group until it ends; returns its status.
// `events` wakes the loop for anything else the guard must act on while the
// child runs (nothing posts to it yet; the loss of the claim will).
int supervise(Child& child, const SignalSetup& setup, SignalFd& signals, const Wakeup& events,
              Logger& log) {
  for (;;) {
    for (const int sig : signals.drain()) {
      if (sig == SIGCHLD || setup.was_ignored(sig)) continue;
      log.debug("forwarding signal", {{"signal", signal_name(sig)},
                                      {"pgid", std::to_string(child.pid())}});
      child.signal_group(sig);
    }
    if (auto status = child.poll_exit()) return *status;
    if (wait_for_events(signals, events).wakeup) events.consume();
  }
}

}  // namespace

int run_command(const RunArgs& args, const std::shared_ptr<Logger>& logger) {
  // First, before any thread exists: every thread inherits the blocked mask.
  const SignalSetup setup;
  SignalFd signals(setup);
  const Wakeup events;  // posted by other threads while the child runs
  Logger& log = *logger;

  const Getenv getenv = process_environment();
  if (args.command.empty()) {
    log.error("no command to run: instance-guard run [flags] -- COMMAND [ARGS...]");
    return kExitUsage;
  }
  auto ttl = resolve_ttl(args.ttl, getenv);
  if (!ttl) {
    log.error(ttl.error().message);
    return ttl.error().exit_code;
  }
  auto url = resolve_store_url(args.store, command_basename(args.command.front()), getenv);
  if (!url) {
    log.error(url.error().message);
    return url.error().exit_code;
  }

  auto store = open_store(*url, open_options(args.store, logger, *ttl));
  if (!store) {
    log.error(store.error().message, {{"store", redact_url(*url)}});
    return exit_code_for(store.error().code);
  }
  GuardOptions options;
  if (*ttl) options.ttl = **ttl;
  options.id = resolve_id(args.id, getenv);
  options.logger = logger;
  auto guard = Guard::create(*store, std::move(options));
  if (!guard) {
    log.error(guard.error().message);
    return guard.error().code == Errc::invalid ? kExitConfig : exit_code_for(guard.error().code);
  }

  auto claim = claim_watching_signals(*guard, setup, signals, log);
  if (!claim) return claim.error();

  const ChildSpec spec{args.command, environment_with(environ, "INSTANCE_GUARD_ID", claim->id())};
  auto child = Child::spawn(spec, setup);
  if (!child) {
    log.error(child.error().message);
    if (auto down = claim->stand_down(); !down) {
      log.warn("stand down failed", {{"error", down.error().message}});
    }
    return child.error().exit_code;
  }
  log.debug("child started", {{"pid", std::to_string(child->pid())}, {"command", args.command.front()}});

  const int status = supervise(*child, setup, signals, events, log);
  log.info("child exited; standing down", {{"status", std::to_string(status)}});
  if (auto down = claim->stand_down(); !down) {
    log.warn("stand down failed; the record expires on its own",
             {{"error", down.error().message},
              {"expires_at", format_rfc3339(claim->record().expires_at)}});
  }
  return status;
}

}  // namespace instance::cli
