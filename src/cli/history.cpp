// `instance-guard history`: the store's tenure history (instance/history.hpp)
// as a table or JSON, judged by analyse_history(), and optionally drawn as a
// timeline (timeline.hpp). Exit status 0 when clean, 1 when it found an
// overlap or an epoch that did not grow.
#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "instance/admin.hpp"
#include "instance/history.hpp"
#include "instance/sdk/text.hpp"
#include "instance/time.hpp"
#include "timeline.hpp"

namespace instance::cli {

namespace {

std::int64_t ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// A duration for the table, to the millisecond.
std::string shown(Duration d) {
  return format_duration(std::chrono::round<std::chrono::milliseconds>(d));
}

std::string how_ended(const HistoryReport& r, std::size_t i) {
  const Tenure& t = r.tenures[i];
  if (r.inferred_end[i] && !r.end[i]) return "open: no end written, and its record is gone";
  if (r.inferred_end[i]) return "open: no end written (its holder died?), ended by the next claim";
  if (!t.ended_at) return "holding";
  if (t.end == "stood_down") return "stood down";
  if (t.end == "crashed") return "crashed (ended at its last renewal)";
  return t.end + (t.reason.empty() ? "" : ": " + t.reason);
}

std::string who(const Tenure& t) {
  std::string out = t.id;
  if (!t.host.empty()) out += " on " + t.host;
  if (t.pid) out += " pid " + std::to_string(*t.pid);
  return out;
}

nlohmann::ordered_json to_json(const HistoryReport& r, const std::vector<HistoryEntry>& unreadable,
                               const std::string& store, WallTime now) {
  nlohmann::ordered_json out;
  out["store"] = store;
  out["clean"] = r.clean();
  auto tenures = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.tenures.size(); ++i) {
    const Tenure& t = r.tenures[i];
    nlohmann::ordered_json j;
    j["id"] = t.id;
    j["host"] = t.host;
    j["pid"] = t.pid ? nlohmann::ordered_json(*t.pid) : nullptr;
    j["mode"] = t.mode;
    j["epoch"] = t.epoch ? nlohmann::ordered_json(*t.epoch) : nullptr;
    j["claimed_at"] = format_rfc3339(t.claimed_at);
    j["ended_at"] = r.end[i] ? nlohmann::ordered_json(format_rfc3339(*r.end[i])) : nullptr;
    j["end"] = r.inferred_end[i] ? "unknown" : t.end.empty() ? "holding" : t.end;
    j["reason"] = t.reason.empty() ? nullptr : nlohmann::ordered_json(t.reason);
    j["held_ms"] = ms(r.end[i].value_or(now) - t.claimed_at);
    j["gap_before_ms"] = r.gap_before[i] ? nlohmann::ordered_json(ms(*r.gap_before[i])) : nullptr;
    tenures.push_back(std::move(j));
  }
  out["tenures"] = std::move(tenures);
  auto overlaps = nlohmann::ordered_json::array();
  for (const auto& o : r.overlaps) {
    overlaps.push_back({{"first", r.tenures[o.first].id},
                        {"first_claimed_at", format_rfc3339(r.tenures[o.first].claimed_at)},
                        {"second", r.tenures[o.second].id},
                        {"second_claimed_at", format_rfc3339(r.tenures[o.second].claimed_at)},
                        {"amount_ms", ms(o.amount)}});
  }
  out["overlaps"] = std::move(overlaps);
  auto epochs = nlohmann::ordered_json::array();
  for (const auto& e : r.epoch_regressions) {
    epochs.push_back({{"earlier", r.tenures[e.earlier].id},
                      {"earlier_epoch", *r.tenures[e.earlier].epoch},
                      {"later", r.tenures[e.later].id},
                      {"later_epoch", *r.tenures[e.later].epoch}});
  }
  out["epochs_not_increasing"] = std::move(epochs);
  auto bad = nlohmann::ordered_json::array();
  for (const auto& e : unreadable) bad.push_back({{"key", e.key.str()}, {"problem", e.problem}});
  out["unreadable"] = std::move(bad);
  return out;
}

void print_text(const HistoryReport& r, const std::vector<HistoryEntry>& unreadable,
                const std::string& store, WallTime now) {
  std::cout << "history of " << store << ": " << r.tenures.size() << " tenure"
            << (r.tenures.size() == 1 ? "" : "s") << ", oldest first\n";
  using Row = std::array<std::string, 8>;
  std::vector<Row> rows{{"CLAIMED", "ID", "HOST", "PID", "MODE", "EPOCH", "HELD", "GAP BEFORE"}};
  std::vector<std::string> ends{""};
  for (std::size_t i = 0; i < r.tenures.size(); ++i) {
    const Tenure& t = r.tenures[i];
    rows.push_back(Row{format_rfc3339(t.claimed_at), printable(t.id, 60),
                       t.host.empty() ? "-" : printable(t.host, 40),
                       t.pid ? std::to_string(*t.pid) : "-", t.mode.empty() ? "-" : t.mode,
                       t.epoch ? std::to_string(*t.epoch) : "-",
                       shown(r.end[i].value_or(now) - t.claimed_at),
                       r.gap_before[i]             ? shown(*r.gap_before[i])
                       : i > 0 && !r.gap_before[i] ? "OVERLAP"
                                                   : "-"});
    ends.push_back(how_ended(r, i));
  }
  std::array<std::size_t, 8> width{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (std::size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (std::size_t i = 0; i < rows[k].size(); ++i) {
      line += rows[k][i] + std::string(width[i] - rows[k][i].size() + 2, ' ');
    }
    line += k == 0 ? "END" : printable(ends[k], 200);
    std::cout << line << '\n';
  }
  if (r.overlaps.empty()) {
    std::cout << "overlaps: none\n";
  } else {
    for (const auto& o : r.overlaps) {
      std::cout << "OVERLAP: " << who(r.tenures[o.first]) << " (claimed "
                << format_rfc3339(r.tenures[o.first].claimed_at) << ") and "
                << who(r.tenures[o.second]) << " (claimed "
                << format_rfc3339(r.tenures[o.second].claimed_at) << ") held at once for "
                << format_duration(o.amount) << '\n';
    }
  }
  if (r.epoch_regressions.empty()) {
    std::cout << "epochs: each exclusive tenure's is larger than the one before\n";
  } else {
    for (const auto& e : r.epoch_regressions) {
      std::cout << "EPOCH DID NOT GROW: " << who(r.tenures[e.later]) << " got epoch "
                << *r.tenures[e.later].epoch << " after " << who(r.tenures[e.earlier]) << "'s "
                << *r.tenures[e.earlier].epoch << '\n';
    }
  }
  for (const auto& e : unreadable) {
    std::cout << "unreadable: " << e.key.str() << ": " << printable(e.problem, 200) << '\n';
  }
}

// The part of `r` held at or after `cutoff`: the tenures that had not ended
// by then, and the findings about them.
HistoryReport within(HistoryReport r, WallTime cutoff, WallTime now) {
  std::vector<std::size_t> index(r.tenures.size(), SIZE_MAX);
  HistoryReport out;
  for (std::size_t i = 0; i < r.tenures.size(); ++i) {
    if (r.end[i].value_or(now) < cutoff) continue;
    index[i] = out.tenures.size();
    out.tenures.push_back(std::move(r.tenures[i]));
    out.end.push_back(r.end[i]);
    out.inferred_end.push_back(r.inferred_end[i]);
    out.gap_before.push_back(out.tenures.size() == 1 ? std::nullopt : r.gap_before[i]);
  }
  for (const auto& o : r.overlaps) {
    if (index[o.first] != SIZE_MAX && index[o.second] != SIZE_MAX) {
      out.overlaps.push_back({index[o.first], index[o.second], o.amount});
    }
  }
  for (const auto& e : r.epoch_regressions) {
    if (index[e.earlier] != SIZE_MAX && index[e.later] != SIZE_MAX) {
      out.epoch_regressions.push_back({index[e.earlier], index[e.later]});
    }
  }
  return out;
}

}  // namespace

int history_command(const HistoryArgs& args, const std::shared_ptr<Logger>& logger) {
  Logger& log = *logger;
  std::optional<Duration> since;
  if (args.since) {
    auto d = parse_duration(*args.since);
    if (!d || *d <= Duration::zero()) {
      log.error("--since: expected a positive duration such as 24h or 90m, got \"" +
                printable(*args.since) + "\"");
      return kExitUsage;
    }
    since = *d;
  }
  auto store = open_store_from_flags(args.store, log, logger, /*read_only=*/true);
  if (!store) return store.error();
  auto entries = read_history(**store);
  if (!entries) {
    log.error(entries.error().message, {{"store", (*store)->describe()}});
    return exit_code_for(entries.error().code);
  }
  const WallTime now = system_clock()->wall();
  std::vector<Tenure> tenures;
  std::vector<HistoryEntry> unreadable;
  for (auto& e : *entries) {
    if (!e.tenure) {
      unreadable.push_back(std::move(e));
      continue;
    }
    tenures.push_back(std::move(*e.tenure));
  }
  // An open tenure whose holder's record is live holds now, whoever came
  // after it.
  auto records = list_instances(**store, now);
  if (!records) {
    log.error(records.error().message, {{"store", (*store)->describe()}});
    return exit_code_for(records.error().code);
  }
  auto still_held = [&](const Tenure& t) {
    return std::ranges::any_of(*records, [&](const InstanceEntry& e) {
      return e.live && e.record && e.record->id == t.id && e.record->started_at == t.started_at;
    });
  };
  HistoryReport report = analyse_history(std::move(tenures), now, still_held);
  if (since) report = within(std::move(report), now - *since, now);
  const std::string shown = (*store)->describe();
  if (args.json) {
    std::cout << to_json(report, unreadable, shown, now)
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << '\n';
  } else {
    print_text(report, unreadable, shown, now);
  }
  if (args.svg) {
    std::ofstream out(*args.svg, std::ios::binary | std::ios::trunc);
    out << timeline_svg(report, shown, now);
    out.close();
    if (!out) {
      log.error("cannot write the timeline to " + printable(*args.svg));
      return kExitCantCreate;
    }
  }
  std::cout.flush();
  if (!std::cout) return kExitSoftware;
  return report.clean() ? kExitOk : kExitFound;
}

}  // namespace instance::cli
