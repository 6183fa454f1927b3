// The subcommands of instance-guard. Each returns the process exit code
// (exit_codes.hpp) and reports failures on the logger (stderr); `status`
// prints its table or JSON on stdout.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "instance/logger.hpp"

namespace instance::cli {

struct RunArgs {
  StoreFlags store;
  std::optional<std::string> ttl;       // --ttl
  std::optional<std::string> id;        // --id
  std::optional<std::string> mode;      // --mode (env INSTANCE_GUARD_MODE)
  std::optional<std::string> max_skew;  // --max-skew
  std::optional<std::string> settle;    // --settle
  std::string on_lost = "terminate";    // --on-lost: terminate or ignore
  std::string kill_after = "10s";       // --kill-after
  // --stand-down-timeout (env INSTANCE_GUARD_STAND_DOWN_TIMEOUT) [10s]
  std::optional<std::string> stand_down_timeout;
  // --startup-timeout (env INSTANCE_GUARD_STARTUP_TIMEOUT) [30s]
  std::optional<std::string> startup_timeout;
  // --wait[=TIMEOUT]: nullopt without --wait; "" (or "0") waits forever.
  std::optional<std::string> wait;
  // --metrics-file: where the claim's metrics go (Prometheus text format).
  std::optional<std::string> metrics_file;
  // --no-history, --history-keep N: the tenure history under history/.
  bool no_history = false;
  std::optional<std::size_t> history_keep;
  std::vector<std::string> command;
};

// `run`: claims the store, runs the command as a guarded child, forwards
// signals to it, stands down when it exits and returns its status. Blocks
// the forwarded signals first: call it before the process starts any thread.
int run_command(const RunArgs& args, const std::shared_ptr<Logger>& logger);

struct StatusArgs {
  StoreFlags store;
  bool json = false;
  std::optional<std::string> mode;  // --mode (env INSTANCE_GUARD_MODE)
};

// `status`: every record under instances/, as a table or a JSON array. The
// text output first says which mode (and guarantee) `run --mode` would use.
int status_command(const StatusArgs& args, const std::shared_ptr<Logger>& logger);

struct ReleaseArgs {
  StoreFlags store;
  std::string id;
  bool force = false;
};

// `release`: removes one record; a live (or unreadable) one only with --force.
int release_command(const ReleaseArgs& args, const std::shared_ptr<Logger>& logger);

struct HistoryArgs {
  StoreFlags store;
  std::optional<std::string> since;  // --since DURATION: tenures that ended within it
  bool json = false;
  std::optional<std::string> svg;  // --svg FILE: the timeline picture
};

int history_command(const HistoryArgs& args, const std::shared_ptr<Logger>& logger);

}  // namespace instance::cli
