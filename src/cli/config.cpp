#include "config.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "exit_codes.hpp"
#include "instance/time.hpp"

namespace instance::cli {

namespace {

// Parses a Go duration that must be positive; `origin` names where it came from.
std::expected<Duration, std::string> positive_duration(std::string_view text,
                                                       std::string_view origin) {
  auto parsed = parse_duration(text);
  if (!parsed) {
    return std::unexpected(std::string(origin) + ": " + parsed.error().message +
                           " (Go duration syntax, e.g. 500ms, 90s, 2m, 1h30m)");
  }
  if (parsed->count() <= 0) {
    return std::unexpected(std::string(origin) + ": the ttl must be positive, got \"" +
                           std::string(text) + "\"");
  }
  return *parsed;
}

// $HOME, else the password database's home folder.
std::optional<std::string> home_folder(const Getenv& getenv) {
  if (auto home = getenv("HOME")) return home;
  // getpwuid is not thread-safe; this runs before the tool starts any thread.
  if (const passwd* pw = ::getpwuid(::getuid());
      pw != nullptr && pw->pw_dir != nullptr && pw->pw_dir[0] != '\0') {
    return std::string(pw->pw_dir);
  }
  return std::nullopt;
}

}  // namespace

Getenv process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || value[0] == '\0') return std::nullopt;
    return std::string(value);
  };
}

bool is_usable_name(std::string_view name) noexcept {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

std::string command_basename(std::string_view command) {
  while (command.size() > 1 && command.ends_with('/')) command.remove_suffix(1);
  const auto slash = command.rfind('/');
  return std::string(slash == std::string_view::npos ? command : command.substr(slash + 1));
}

Resolved<std::string> resolve_store_url(const StoreFlags& flags, std::string_view default_name,
                                        const Getenv& getenv) {
  if (flags.store && !flags.store->empty()) return *flags.store;
  if (auto from_env = getenv("INSTANCE_GUARD_STORE")) return *from_env;

  const std::string name = flags.name ? *flags.name : std::string(default_name);
  if (!is_usable_name(name)) {
    return std::unexpected(ConfigError{
        kExitUsage, name.empty() ? "no store given: pass --store URL, set INSTANCE_GUARD_STORE, or "
                                   "pass --name NAME to use the default local store"
                                 : "cannot use \"" + name +
                                       "\" as the store name (it must be a single folder name); "
                                       "pass --name NAME or --store URL"});
  }
  std::filesystem::path base;
  if (auto state = getenv("XDG_STATE_HOME"); state && state->starts_with('/')) {
    base = *state;
  } else if (auto home = home_folder(getenv)) {
    base = std::filesystem::path(*home) / ".local" / "state";
  } else {
    return std::unexpected(
        ConfigError{kExitConfig,
                    "no default store folder: neither XDG_STATE_HOME nor a home folder is "
                    "known; pass --store URL or set INSTANCE_GUARD_STORE"});
  }
  return (base / "instance-guard" / name).string();
}

Resolved<std::optional<Duration>> resolve_ttl(const std::optional<std::string>& flag,
                                              const Getenv& getenv) {
  if (flag) {
    auto ttl = positive_duration(*flag, "--ttl");
    if (!ttl) return std::unexpected(ConfigError{kExitUsage, ttl.error()});
    return *ttl;
  }
  if (auto from_env = getenv("INSTANCE_GUARD_TTL")) {
    auto ttl = positive_duration(*from_env, "INSTANCE_GUARD_TTL");
    if (!ttl) return std::unexpected(ConfigError{kExitConfig, ttl.error()});
    return *ttl;
  }
  return std::optional<Duration>{};
}

Resolved<Mode> resolve_mode(const std::optional<std::string>& flag, const Getenv& getenv) {
  if (flag) {
    auto mode = parse_mode(*flag);
    if (!mode) {
      return std::unexpected(ConfigError{
          kExitUsage,
          "--mode: unknown mode \"" + *flag + "\" (auto, announce, verify or exclusive)"});
    }
    return *mode;
  }
  if (auto from_env = getenv("INSTANCE_GUARD_MODE")) {
    auto mode = parse_mode(*from_env);
    if (!mode) {
      return std::unexpected(
          ConfigError{kExitConfig, "INSTANCE_GUARD_MODE: unknown mode \"" + *from_env +
                                       "\" (auto, announce, verify or exclusive)"});
    }
    return *mode;
  }
  return Mode::automatic;
}

Resolved<std::optional<Duration>> resolve_duration_flag(const std::optional<std::string>& flag,
                                                        std::string_view flag_name) {
  if (!flag) return std::optional<Duration>{};
  auto parsed = parse_duration(*flag);
  if (!parsed) {
    return std::unexpected(
        ConfigError{kExitUsage, std::string(flag_name) + ": " + parsed.error().message +
                                    " (Go duration syntax, e.g. 500ms, 5s, 2m)"});
  }
  if (parsed->count() < 0) {
    return std::unexpected(ConfigError{
        kExitUsage, std::string(flag_name) + ": must not be negative, got \"" + *flag + "\""});
  }
  return *parsed;
}

Resolved<Duration> resolve_budget(const std::optional<std::string>& flag,
                                  std::string_view flag_name, std::string_view env,
                                  Duration fallback, const Getenv& getenv) {
  if (flag) {
    auto d = resolve_duration_flag(flag, flag_name);
    if (!d) return std::unexpected(d.error());
    return **d;
  }
  if (auto from_env = getenv(env)) {
    auto d = resolve_duration_flag(from_env, env);
    if (!d) return std::unexpected(ConfigError{kExitConfig, d.error().message});
    return **d;
  }
  return fallback;
}

Resolved<Duration> resolve_stand_down_timeout(const std::optional<std::string>& flag,
                                              const Getenv& getenv) {
  return resolve_budget(flag, "--stand-down-timeout", "INSTANCE_GUARD_STAND_DOWN_TIMEOUT",
                        kDefaultStandDownTimeout, getenv);
}

Resolved<Duration> resolve_startup_timeout(const std::optional<std::string>& flag,
                                           const Getenv& getenv) {
  return resolve_budget(flag, "--startup-timeout", "INSTANCE_GUARD_STARTUP_TIMEOUT",
                        kDefaultStartupTimeout, getenv);
}

std::string_view guarantee_summary(Mode mode) noexcept {
  switch (mode) {
    case Mode::announce:
      return "none: not a lock; two instances starting at the same moment can both run";
    case Mode::verify:
      return "mutual exclusion while the store shows every acknowledged write within the settle "
             "time";
    case Mode::exclusive:
      return "mutual exclusion by a compare-and-set lease or the store's own lock, with a "
             "fencing epoch";
    default:
      return "the strongest the store supports";
  }
}

std::string_view expiry_summary(Mode mode, const Capabilities& caps) noexcept {
  if (mode == Mode::exclusive && caps.native_lease && caps.ends_stale_locks) {
    return "the store's lock while its holder renews it; a holder that stops renewing has its "
           "lock ended by the next claim once its lease expired by more than --max-skew (the "
           "guards' clocks), however long the server would keep it";
  }
  if (mode == Mode::exclusive && caps.native_lease && caps.server_clock) {
    return "server clock (the store's own lease expires there; client clocks are not trusted)";
  }
  if (mode == Mode::exclusive && caps.native_lease) {
    return "the store's lock, held until its holder ends (records: each guard's clock)";
  }
  return "client clocks (each guard judges records' expires_at by its own clock, with "
         "--max-skew margin)";
}

std::string resolve_id(const std::optional<std::string>& flag, const Getenv& getenv) {
  if (flag) return *flag;
  return getenv("INSTANCE_GUARD_ID").value_or("");
}

OpenOptions open_options(const StoreFlags& flags, std::shared_ptr<Logger> logger) {
  OpenOptions options;
  options.logger = std::move(logger);
  options.user = flags.user;
  options.password_file = flags.password_file;
  options.token_file = flags.token_file;
  copy_tls_options(flags, options);
  options.create_path = flags.create_path;
  if (const auto env = process_environment()("INSTANCE_GUARD_CREATE_PATH")) {
    options.create_path =
        options.create_path || *env == "1" || *env == "true" || *env == "yes" || *env == "on";
  }
  options.module_folder = tool_module_folder();
  return options;
}

std::filesystem::path tool_module_folder() {
  if (process_environment()("INSTANCE_GUARD_STORE_MODULES")) return {};
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const auto bin = self.parent_path();
  // A build tree has CMakeCache.txt beside the tool; an installed tool never does.
  if (std::filesystem::exists(bin / "CMakeCache.txt", ec) &&
      std::filesystem::is_directory(bin / "stores", ec)) {
    return bin / "stores";
  }
  return (bin / INSTANCE_TOOL_TO_STORE_MODULES).lexically_normal();
}

std::expected<std::shared_ptr<Store>, int> open_store_from_flags(
    const StoreFlags& flags, Logger& log, const std::shared_ptr<Logger>& logger, bool read_only) {
  auto url = resolve_store_url(flags, "", process_environment());
  if (!url) {
    log.error(url.error().message);
    return std::unexpected(url.error().exit_code);
  }
  auto options = open_options(flags, logger);
  options.read_only = read_only;
  auto store = open_store(*url, options);
  if (!store) {
    log.error(store.error().message, {{"store", redact_url(*url)}});
    return std::unexpected(exit_code_for(store.error().code));
  }
  return *store;
}

}  // namespace instance::cli
