// Tenure documents, their keys, reading them back and judging them
// (instance/history.hpp). What the guard writes and when is in guard.cpp.
#include "instance/history.hpp"

#include <algorithm>
#include <cstdio>

#include "json_doc.hpp"

namespace instance {

namespace {

// "20261203T155700.123456789Z": sorts as the time does (years 1000 to 9999).
std::string stamp(WallTime t) {
  const auto whole = std::chrono::floor<std::chrono::seconds>(t);
  std::string text = format_rfc3339(whole);  // 2026-12-03T15:57:00Z
  std::erase(text, '-');
  std::erase(text, ':');
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%09lld", static_cast<long long>((t - whole).count()));
  text.insert(text.size() - 1, fraction);
  return text;
}

std::int64_t to_ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

std::string encode_tenure(const Tenure& t) {
  nlohmann::ordered_json j;
  j["id"] = t.id;
  j["host"] = t.host;
  if (t.pid) j["pid"] = *t.pid;
  j["mode"] = t.mode;
  if (t.epoch) j["epoch"] = *t.epoch;
  j["started_at"] = format_rfc3339(t.started_at);
  j["claimed_at"] = format_rfc3339(t.claimed_at);
  j["max_skew_ms"] = to_ms(t.max_skew);
  if (t.ended_at) j["ended_at"] = format_rfc3339(*t.ended_at);
  if (!t.end.empty()) j["end"] = t.end;
  if (!t.reason.empty()) j["reason"] = t.reason;
  return detail::dump_json(j);
}

Result<Tenure> decode_tenure(std::string_view bytes) {
  auto bad = [](std::string_view why) {
    return fail(Errc::malformed, "not a tenure document: " + std::string(why));
  };
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  Tenure t;
  try {
    t.id = j.at("id").get<std::string>();
    t.host = j.value("host", "");
    if (j.contains("pid")) t.pid = j.at("pid").get<std::int64_t>();
    t.mode = j.value("mode", "");
    if (j.contains("epoch")) t.epoch = j.at("epoch").get<std::uint64_t>();
    auto claimed = detail::optional_time(j, "claimed_at");
    if (!claimed) return bad("no claimed_at");
    t.claimed_at = *claimed;
    t.started_at = detail::optional_time(j, "started_at").value_or(t.claimed_at);
    const auto skew_ms = j.value("max_skew_ms", std::int64_t{0});
    if (skew_ms < 0) return bad("max_skew_ms is negative");
    t.max_skew = std::chrono::milliseconds(skew_ms);
    t.ended_at = detail::optional_time(j, "ended_at");
    t.end = j.value("end", "");
    t.reason = j.value("reason", "");
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  if (t.id.empty()) return bad("no id");
  if (t.ended_at.has_value() != !t.end.empty()) return bad("ended_at and end go together");
  if (!t.end.empty() && t.end != "stood_down" && t.end != "lost" && t.end != "crashed") {
    return bad("end \"" + t.end + "\" is none of stood_down, lost, crashed");
  }
  return t;
}

const Key& history_prefix() {
  static const Key prefix = *Key::parse("history");
  return prefix;
}

Result<Key> tenure_key(std::string_view id, WallTime started_at) {
  if (id.empty()) return fail(Errc::invalid, "an instance id must not be empty");
  return history_prefix().child(stamp(started_at) + "-" + std::string(id));
}

Result<std::vector<HistoryEntry>> read_history(Store& store) {
  auto keys = store.list(history_prefix());
  if (!keys) {
    return fail(keys.error().code, "cannot list the tenure history: " + keys.error().message);
  }
  std::sort(keys->begin(), keys->end(),
            [](const Key& a, const Key& b) { return a.str() < b.str(); });
  std::vector<HistoryEntry> out;
  for (const Key& key : *keys) {
    auto doc = store.get(key);
    if (!doc && doc.error().code == Errc::not_found) continue;  // pruned since listed
    HistoryEntry entry{.key = key};
    if (!doc && doc.error().code != Errc::malformed) {
      return fail(doc.error().code, "cannot read " + key.str() + ": " + doc.error().message);
    }
    auto tenure = doc ? decode_tenure(doc->data) : std::unexpected(doc.error());
    if (tenure) {
      entry.tenure = std::move(*tenure);
    } else {
      entry.problem = tenure.error().message;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

HistoryReport analyse_history(std::vector<Tenure> tenures, WallTime now,
                              const std::function<bool(const Tenure&)>& still_held) {
  std::stable_sort(tenures.begin(), tenures.end(),
                   [](const Tenure& a, const Tenure& b) { return a.claimed_at < b.claimed_at; });
  HistoryReport r;
  const std::size_t n = tenures.size();
  r.end.resize(n);
  r.inferred_end.resize(n, false);
  r.gap_before.resize(n);
  std::vector<WallTime> until(n);  // when each held, for overlaps
  for (std::size_t i = 0; i < n; ++i) {
    // A holder whose record is live holds now: even when a successor closed
    // its tenure as crashed (it was paused, not dead, and ran on).
    const bool held_now = still_held && (!tenures[i].ended_at || tenures[i].end == "crashed") &&
                          still_held(tenures[i]);
    if (held_now) {
      until[i] = std::max(now, tenures[i].claimed_at);
    } else if (tenures[i].ended_at) {
      r.end[i] = tenures[i].ended_at;
      until[i] = std::max(*tenures[i].ended_at, tenures[i].claimed_at);
    } else if (i + 1 < n) {
      // Open, yet another holder came after it: its holder died without a
      // successor closing its tenure. It ended by the next one's start, at
      // the latest; that is all we know.
      r.end[i] = tenures[i + 1].claimed_at;
      r.inferred_end[i] = true;
      until[i] = tenures[i + 1].claimed_at;
    } else {
      // Nothing follows: held now, as far as the history can tell; when its
      // holder's record is gone, it died and nobody closed it (its end is
      // unknown; it still counts until now for overlaps).
      until[i] = std::max(now, tenures[i].claimed_at);
      if (still_held && !still_held(tenures[i])) r.inferred_end[i] = true;
    }
  }
  std::optional<WallTime> latest_end;
  for (std::size_t j = 0; j < n; ++j) {
    bool overlapped = false;
    for (std::size_t i = 0; i < j; ++i) {
      const Duration both = std::min(until[i], until[j]) - tenures[j].claimed_at;
      const Duration margin = tenures[i].host == tenures[j].host && !tenures[i].host.empty()
                                  ? Duration::zero()
                                  : tenures[i].max_skew + tenures[j].max_skew;
      if (both > Duration::zero()) overlapped = true;
      if (both > margin) r.overlaps.push_back({.first = i, .second = j, .amount = both});
    }
    if (latest_end && !overlapped) r.gap_before[j] = tenures[j].claimed_at - *latest_end;
    latest_end = latest_end ? std::max(*latest_end, until[j]) : until[j];
  }
  std::optional<std::size_t> last_exclusive;
  for (std::size_t j = 0; j < n; ++j) {
    if (!tenures[j].epoch) continue;
    if (last_exclusive && *tenures[j].epoch <= *tenures[*last_exclusive].epoch) {
      r.epoch_regressions.push_back({.earlier = *last_exclusive, .later = j});
    }
    last_exclusive = j;
  }
  r.tenures = std::move(tenures);
  return r;
}

}  // namespace instance
