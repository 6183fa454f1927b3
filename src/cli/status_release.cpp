// `instance-guard status` and `instance-guard release`: operator views over
// list_instances() and release_instance().

#include <algorithm>
#include <array>
#include <chrono>
#include <expected>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "instance/admin.hpp"
#include "instance/guard.hpp"
#include "instance/open_store.hpp"
#include "instance/time.hpp"

namespace instance::cli {

namespace {

// The id to show: the record's, else the key's last segment.
std::string shown_id(const InstanceEntry& entry) {
  return entry.record ? entry.record->id : entry.key.leaf();
}

// "in 1m30s" / "2m0s ago", to the second.
std::string relative(WallTime t, WallTime now) {
  const auto secs = std::chrono::round<std::chrono::seconds>(t - now);
  if (secs.count() >= 0) return "in " + format_duration(secs);
  return format_duration(-secs) + " ago";
}

std::string seconds_precision(WallTime t) {
  return format_rfc3339(std::chrono::floor<std::chrono::seconds>(t));
}

nlohmann::ordered_json to_json(const InstanceEntry& entry) {
  nlohmann::ordered_json out;
  out["id"] = shown_id(entry);
  out["key"] = entry.key.str();
  const Record* r = entry.record ? &*entry.record : nullptr;
  out["host"] = r && !r->host.empty() ? nlohmann::ordered_json(r->host) : nullptr;
  out["pid"] = r && r->pid ? nlohmann::ordered_json(*r->pid) : nullptr;
  out["started_at"] = r ? nlohmann::ordered_json(format_rfc3339(r->started_at)) : nullptr;
  out["expires_at"] = r ? nlohmann::ordered_json(format_rfc3339(r->expires_at)) : nullptr;
  out["renewed_at"] =
      r && r->renewed_at ? nlohmann::ordered_json(format_rfc3339(*r->renewed_at)) : nullptr;
  out["mode"] = r && !r->mode.empty() ? nlohmann::ordered_json(r->mode) : nullptr;
  out["state"] = r && !r->state.empty() ? nlohmann::ordered_json(r->state) : nullptr;
  out["live"] = entry.live;
  out["process_gone"] = entry.process_gone;
  out["from_earlier_boot"] = entry.from_earlier_boot;
  out["readable"] = entry.readable;
  out["problem"] = entry.readable ? nullptr : nlohmann::ordered_json(entry.problem);
  return out;
}

void print_table(const std::vector<InstanceEntry>& entries, WallTime now) {
  using Row = std::array<std::string, 7>;
  std::vector<Row> rows{{"ID", "HOST", "PID", "STARTED", "EXPIRES", "STATE", "PROBLEM"}};
  for (const auto& e : entries) {
    const Record* r = e.record ? &*e.record : nullptr;
    rows.push_back(Row{
        shown_id(e),
        r && !r->host.empty() ? r->host : "-",
        r && r->pid ? std::to_string(*r->pid) : "-",
        r ? seconds_precision(r->started_at) : "-",
        r ? seconds_precision(r->expires_at) + " (" + relative(r->expires_at, now) + ")" : "-",
        !e.readable && e.from_earlier_boot ? "unreadable (dead: written before this boot)"
        : !e.readable                      ? "unreadable (live)"
        : e.live                           ? "live"
        : e.process_gone                   ? "dead (its process on this host is gone)"
        : e.from_earlier_boot              ? "dead (written before this boot)"
                                           : "expired",
        e.readable ? "" : e.problem,
    });
  }
  std::array<std::size_t, 7> width{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (line.ends_with(' ')) line.pop_back();
    std::cout << line << '\n';
  }
}

// "mode: exclusive (auto): mutual exclusion by ..." for `run --mode` on this
// store, then "expiry judged by: ..."; a store that did not learn its
// capabilities (opened read-only, it would have had to write; or its server
// did not answer) says so, and why.
std::string mode_lines(const std::shared_ptr<Store>& store, Mode requested) {
  if (const auto caps = store->capabilities(); caps.unknown) {
    return "mode: " + std::string(to_string(requested)) +
           ": decided by `run` (capabilities: " + caps.unknown->message + ")";
  }
  GuardOptions options;
  options.mode = requested;
  auto guard = Guard::create(store, std::move(options));
  if (!guard) return "mode: " + std::string(to_string(requested)) + ": " + guard.error().message;
  auto choice = guard->choose_mode();
  std::string line = "mode: ";
  if (!choice) return line + std::string(to_string(requested)) + ": " + choice.error().message;
  line += to_string(choice->mode);
  if (requested == Mode::automatic) line += " (auto)";
  line += ": " + std::string(guarantee_summary(choice->mode));
  // The store's own servers' part in it (an etcd cluster's majority).
  if (const auto caps = store->capabilities();
      choice->mode == Mode::exclusive && caps.native_lease && !caps.agreement.empty()) {
    line += "; " + caps.agreement;
  }
  if (requested == Mode::automatic) line += "\nchosen because: " + choice->reason;
  return line +
         "\nexpiry judged by: " + std::string(expiry_summary(choice->mode, store->capabilities()));
}

// "store lock: held by ID, its lease expired 55s ago: the next claim ends it"
// where the store can tell who holds its lock (a WebDAV server's, which may
// outlive its holder); "" when nobody holds it or the store cannot tell.
std::string lock_line(Store& store, WallTime now) {
  auto lock = read_store_lock(store);
  if (!lock) return "store lock: cannot tell who holds it (" + lock.error().message + ")";
  if (!*lock) return {};
  const StoreLockEntry& e = **lock;
  std::string line = "store lock: held by ";
  if (e.holder.empty()) {
    line += "\"" + printable(e.owner, 120) +
            "\", not an instance-guard lock: no claim ends it; it lasts until the server's own "
            "timeout (remove it on the server, or restart the server)";
  } else {
    line += e.holder;
    if (e.stood_down) {
      line += ", which stood down but could not unlock: the next claim ends it";
    } else if (e.expires_at && now >= *e.expires_at) {
      line += ", its lease expired " + relative(*e.expires_at, now) +
              ": the next claim ends it once it is past max-skew too";
    } else if (e.expires_at) {
      line += ", its lease live until " + seconds_precision(*e.expires_at) + " (" +
              relative(*e.expires_at, now) + ")";
    }
  }
  if (e.locks_outlive_grant) {
    line += "\nstore locks: this server keeps locks past the timeout it grants (seen " +
            seconds_precision(*e.locks_outlive_grant) +
            "); a crashed holder's lock ends only when the next claim ends it";
  }
  return line;
}

}  // namespace

int status_command(const StatusArgs& args, const std::shared_ptr<Logger>& logger) {
  Logger& log = *logger;
  auto requested = resolve_mode(args.mode, process_environment());
  if (!requested) {
    log.error(requested.error().message);
    return requested.error().exit_code;
  }
  auto store = open_store_from_flags(args.store, log, logger, /*read_only=*/true);
  if (!store) return store.error();
  const WallTime now = system_clock()->wall();
  auto entries = list_instances(**store, now);
  if (!entries) {
    log.error(entries.error().message, {{"store", (*store)->describe()}});
    return exit_code_for(entries.error().code);
  }
  if (args.json) {
    auto array = nlohmann::ordered_json::array();
    for (const auto& e : *entries) array.push_back(to_json(e));
    std::cout << array.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    // The JSON stays an array of records; only the text says the mode.
    std::cout << mode_lines(*store, *requested) << '\n';
    if (auto lock = lock_line(**store, now); !lock.empty()) std::cout << lock << '\n';
    if (entries->empty()) {
      std::cout << "no instance records in " << (*store)->describe() << '\n';
    } else {
      print_table(*entries, now);
    }
  }
  std::cout.flush();
  return std::cout ? kExitOk : kExitSoftware;
}

int release_command(const ReleaseArgs& args, const std::shared_ptr<Logger>& logger) {
  Logger& log = *logger;
  if (args.id.empty()) {
    log.error("release needs --id ID");
    return kExitUsage;
  }
  auto store = open_store_from_flags(args.store, log, logger);
  if (!store) return store.error();
  auto released = release_instance(**store, args.id, system_clock()->wall(), args.force);
  if (!released) {
    const Error& e = released.error();
    if (e.code == Errc::another_instance) {
      log.error(e.message, {{"store", (*store)->describe()}, {"hint", "--force removes it"}});
    } else if (e.code == Errc::not_found) {
      log.error(e.message, {{"store", (*store)->describe()}});
    } else {
      log.error(e.message, {{"store", (*store)->describe()}});
    }
    return exit_code_for(e.code);
  }
  std::vector<LogField> fields{{"id", args.id}, {"store", (*store)->describe()}};
  fields.push_back({"record", released->record ? "removed" : "none"});
  if (released->lock) fields.push_back({"lock", "ended (the store's lock it held)"});
  log.log(LogLevel::info, "released", fields);
  return kExitOk;
}

}  // namespace instance::cli
