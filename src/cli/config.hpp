// Settings of the command-line tool: where the store is, how to reach it, and
// the guard's ttl and id, from flags first and the environment second.
//
// Secrets never pass through here as values: credentials are named by file
// (--password-file, --token-file) or come from the environment inside
// open_store(); no flag takes a password or token on the command line, where
// `ps` would show it.
#pragma once

#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/guard.hpp"
#include "instance/logger.hpp"
#include "instance/open_store.hpp"

namespace instance::cli {

// Flags shared by every subcommand that opens a store.
struct StoreFlags {
  std::optional<std::string> store;  // --store URL
  std::optional<std::string> name;   // --name: picks the default store folder
  std::string user;                  // --user
  std::string password_file;         // --password-file
  std::string token_file;            // --token-file
  std::string ca_file;               // --ca-file
  std::string client_cert;           // --client-cert
  std::string client_key;            // --client-key
  bool insecure = false;             // --insecure
  bool create_path = false;          // --create-path (or INSTANCE_GUARD_CREATE_PATH=1)
};

// Looks up an environment variable; nullopt when unset or empty.
using Getenv = std::function<std::optional<std::string>(std::string_view)>;

// The process environment.
Getenv process_environment();

// Why settings could not be resolved: the exit code and a message for stderr.
struct ConfigError {
  int exit_code = 0;
  std::string message;
};

template <class T>
using Resolved = std::expected<T, ConfigError>;

// The store URL: --store, else $INSTANCE_GUARD_STORE, else the per-user folder
//   ${XDG_STATE_HOME:-$HOME/.local/state}/instance-guard/<NAME>
// where NAME is --name, else `default_name` (run: the command's basename).
// A usage error when a default is needed and no usable name is known; a
// configuration error when no home folder can be found. A relative
// XDG_STATE_HOME is ignored, as the XDG spec says.
Resolved<std::string> resolve_store_url(const StoreFlags& flags, std::string_view default_name,
                                        const Getenv& getenv);

// The ttl: --ttl (a usage error when malformed), else $INSTANCE_GUARD_TTL (a
// configuration error when malformed), else nullopt (the guard's default).
// Go duration syntax; must be positive.
Resolved<std::optional<Duration>> resolve_ttl(const std::optional<std::string>& flag,
                                              const Getenv& getenv);

// The id: --id, else $INSTANCE_GUARD_ID, else empty (the guard generates one).
std::string resolve_id(const std::optional<std::string>& flag, const Getenv& getenv);

// The claim mode: --mode (a usage error when unknown), else
// $INSTANCE_GUARD_MODE (a configuration error when unknown), else auto.
Resolved<Mode> resolve_mode(const std::optional<std::string>& flag, const Getenv& getenv);

// A Go duration for `flag_name` that must not be negative (a usage error);
// nullopt when the flag is absent.
Resolved<std::optional<Duration>> resolve_duration_flag(const std::optional<std::string>& flag,
                                                        std::string_view flag_name);

// How long `run` gives standing down once the child has exited.
inline constexpr Duration kDefaultStandDownTimeout = std::chrono::seconds(10);
// How long `run` gives start-up: from the start to claimed, refused or
// unreachable (GuardOptions::startup_timeout's default).
inline constexpr Duration kDefaultStartupTimeout = std::chrono::seconds(30);

// A time budget: `flag` (named `flag_name`; a usage error when malformed or
// negative), else $`env` (a configuration error), else `fallback`.
Resolved<Duration> resolve_budget(const std::optional<std::string>& flag,
                                  std::string_view flag_name, std::string_view env,
                                  Duration fallback, const Getenv& getenv);

// The stand-down budget: --stand-down-timeout, else
// $INSTANCE_GUARD_STAND_DOWN_TIMEOUT, else kDefaultStandDownTimeout
// (resolve_budget).
Resolved<Duration> resolve_stand_down_timeout(const std::optional<std::string>& flag,
                                              const Getenv& getenv);

// The start-up budget: --startup-timeout, else
// $INSTANCE_GUARD_STARTUP_TIMEOUT, else kDefaultStartupTimeout
// (resolve_budget).
Resolved<Duration> resolve_startup_timeout(const std::optional<std::string>& flag,
                                           const Getenv& getenv);

// What a mode guarantees, in a few words (for `status`; a claim says it
// exactly through Claim::guarantee()).
std::string_view guarantee_summary(Mode mode) noexcept;

// Whose clock decides when a claim in `mode` (resolved, never automatic) on
// a store with `caps` expires, for `status`: "the store's clock" when the
// store's own lease is used and judged there (Capabilities::server_clock),
// else each guard's own clock.
std::string_view expiry_summary(Mode mode, const Capabilities& caps) noexcept;

// A name good for one folder: not empty, not "." or "..", no '/' or NUL.
bool is_usable_name(std::string_view name) noexcept;

// The last path component of a command: "/usr/bin/mysvc" -> "mysvc".
std::string command_basename(std::string_view command);

// OpenOptions from the credential flags. Only file names are copied.
// create_path: --create-path, or INSTANCE_GUARD_CREATE_PATH set to 1, true,
// yes or on (from the process environment).
// module_folder: tool_module_folder(). The ttl is not among them: the guard
// tunes the store to its own (Guard::create).
OpenOptions open_options(const StoreFlags& flags, std::shared_ptr<Logger> logger);

// Where the tool loads store modules from: empty when
// INSTANCE_GUARD_STORE_MODULES is set (it wins); <build>/stores when the tool
// runs from its build tree (CMakeCache.txt beside it); else the modules'
// folder of the prefix the tool is installed in, found from the tool's own
// place (<prefix>/bin/../lib/instance-guard/stores for the default layout),
// so an installed tree, a .deb under /usr or a moved prefix all find theirs.
std::filesystem::path tool_module_folder();

// Opens the store the flags name, for the operator commands (status,
// release, history): they have no command to name the default folder after,
// so they need --store, INSTANCE_GUARD_STORE or --name. `read_only`: the
// store never writes. On failure, logs why and gives the exit status.
std::expected<std::shared_ptr<Store>, int> open_store_from_flags(
    const StoreFlags& flags, Logger& log, const std::shared_ptr<Logger>& logger,
    bool read_only = false);

}  // namespace instance::cli
