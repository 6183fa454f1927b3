// The multi-host harness's checker (check.hpp).
#include "hosts/check.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace hosts {
namespace {

std::optional<std::int64_t> parse_epoch(const std::string& arg) {
  if (arg.empty() || arg == "-") return std::nullopt;
  try {
    std::size_t used = 0;
    const auto v = std::stoll(arg, &used);
    if (used == arg.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string epoch_text(const std::optional<std::int64_t>& e) {
  return e ? std::to_string(*e) : "-";
}

// Whether `host` was paused (between a pause and its resume) at `t`.
bool paused_at(const std::vector<Event>& events, const std::string& host, std::int64_t t) {
  bool paused = false;
  for (const auto& e : events) {
    if (e.t > t) break;
    if (e.host != host) continue;
    if (e.kind == "pause") paused = true;
    if (e.kind == "resume") paused = false;
  }
  return paused;
}

nlohmann::json interval_json(const Interval& i) {
  nlohmann::json j{{"host", i.host}, {"start_ms", ms(i.start)}, {"end_ms", ms(i.end)}};
  j["epoch"] = i.epoch ? nlohmann::json(*i.epoch) : nlohmann::json(nullptr);
  if (i.open) j["open"] = true;
  return j;
}

nlohmann::json optional_ms(const std::optional<std::int64_t>& v) {
  return v ? nlohmann::json(ms(*v)) : nlohmann::json(nullptr);
}

// count, min, median, max of the values present, in milliseconds.
nlohmann::json summary(const std::vector<std::int64_t>& values) {
  if (values.empty()) return {{"count", 0}};
  auto v = values;
  std::sort(v.begin(), v.end());
  return {{"count", v.size()},
          {"min_ms", ms(v.front())},
          {"median_ms", ms(v[v.size() / 2])},
          {"max_ms", ms(v.back())}};
}

}  // namespace

std::size_t Report::unexpected_overlaps() const {
  return static_cast<std::size_t>(std::count_if(overlaps.begin(), overlaps.end(),
                                                [](const Overlap& o) { return !o.after_pause; }));
}

std::vector<Event> parse_events(const std::string& text, std::size_t* bad_line) {
  std::vector<Event> out;
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  if (bad_line) *bad_line = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    std::istringstream fields(line);
    Event e;
    std::string rest;
    if (!(fields >> e.t >> e.kind >> e.host >> e.arg) || (fields >> rest)) {
      if (bad_line) *bad_line = number;
      return {};
    }
    static const std::vector<std::string> kinds = {"start", "stop",  "exit",   "fault",
                                                   "heal",  "pause", "resume", "end"};
    if (std::find(kinds.begin(), kinds.end(), e.kind) == kinds.end()) {
      if (bad_line) *bad_line = number;
      return {};
    }
    out.push_back(std::move(e));
  }
  return out;
}

Report check(std::vector<Event> events) {
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.t < b.t; });
  Report r;
  const std::int64_t last = events.empty() ? 0 : events.back().t;

  // Intervals: one child per host at a time.
  std::map<std::string, std::size_t> running;  // host -> index in r.intervals
  for (const auto& e : events) {
    if (e.kind == "start") {
      if (auto it = running.find(e.host); it != running.end()) {
        r.intervals[it->second].end = e.t;  // a start without the previous one's stop
      }
      running[e.host] = r.intervals.size();
      r.intervals.push_back({e.host, parse_epoch(e.arg), e.t, e.t, false});
    } else if (e.kind == "stop" || e.kind == "exit") {
      if (auto it = running.find(e.host); it != running.end()) {
        r.intervals[it->second].end = e.t;
        running.erase(it);
      }
    }
  }
  for (const auto& [host, index] : running) {
    r.intervals[index].end = last;
    r.intervals[index].open = true;
  }

  // Overlaps: every pair on different hosts that ran at once.
  for (std::size_t i = 0; i < r.intervals.size(); ++i) {
    for (std::size_t j = 0; j < r.intervals.size(); ++j) {
      const auto& a = r.intervals[i];
      const auto& b = r.intervals[j];
      if (a.host == b.host) continue;
      if (a.start > b.start || (a.start == b.start && i > j)) continue;  // a is the older
      auto from = std::max(a.start, b.start);
      const auto to = std::min(a.end, b.end);
      const bool after_pause = paused_at(events, a.host, b.start);
      if (after_pause) {
        // A stopped child does nothing: the overlap begins when it is resumed.
        for (const auto& e : events) {
          if (e.kind == "resume" && e.host == a.host && e.t >= b.start) {
            from = std::max(from, e.t);
            break;
          }
        }
      }
      if (to <= from) continue;
      r.overlaps.push_back({a, b, from, to, after_pause});
    }
  }

  // Epochs: each start's epoch is larger than every earlier one.
  std::optional<Interval> highest;
  for (const auto& i : r.intervals) {
    if (!i.epoch) continue;
    if (highest && *i.epoch <= *highest->epoch) r.regressions.push_back({*highest, i});
    if (!highest || *i.epoch > *highest->epoch) highest = i;
  }

  // Faults: who held when each began, and what followed (before the end).
  std::int64_t end_at = INT64_MAX;
  for (const auto& e : events) {
    if (e.kind == "end") {
      end_at = e.t;
      break;
    }
  }
  for (std::size_t k = 0; k < events.size(); ++k) {
    const auto& f = events[k];
    if (f.kind != "fault" && f.kind != "pause") continue;
    Resolution res;
    res.fault = f.kind == "pause" ? "pause" : f.arg;
    res.host = f.host;
    res.at = f.t;
    const std::string heal_kind = f.kind == "pause" ? "resume" : "heal";
    for (std::size_t m = k + 1; m < events.size(); ++m) {
      if (events[m].kind == heal_kind && events[m].host == f.host) {
        res.healed = events[m].t - f.t;
        break;
      }
    }
    // The cycle ends where the next one (or the end) begins: what happens
    // later is that cycle's doing.
    std::int64_t cycle_end = end_at;
    for (std::size_t m = k + 1; m < events.size(); ++m) {
      const auto& kind = events[m].kind;
      if (kind == "fault" || kind == "pause" || kind == "end") {
        cycle_end = events[m].t;
        break;
      }
    }
    const Interval* holder = nullptr;
    for (const auto& i : r.intervals) {
      if (i.start <= f.t && f.t < i.end && (f.host == "*" || i.host == f.host)) holder = &i;
    }
    if (holder) {
      res.hit_holder = true;
      const bool fenced = !holder->open && holder->end < cycle_end;
      if (fenced) res.fenced = holder->end - f.t;
      for (const auto& i : r.intervals) {
        if (i.host == holder->host || i.start < f.t || i.start >= cycle_end) continue;
        res.takeover = i.start - f.t;
        if (fenced) res.handover = i.start - holder->end;
        break;
      }
    }
    r.resolutions.push_back(res);
  }
  return r;
}

std::string format_text(const Report& r) {
  std::ostringstream out;
  out << r.intervals.size() << " children, " << r.overlaps.size() << " overlaps ("
      << r.unexpected_overlaps() << " not after a pause), " << r.regressions.size()
      << " epochs that did not increase\n";
  for (const auto& o : r.overlaps) {
    out << (o.after_pause ? "overlap after a pause: " : "OVERLAP: ") << o.older.host << " (epoch "
        << epoch_text(o.older.epoch) << ") and " << o.newer.host << " (epoch "
        << epoch_text(o.newer.epoch) << ") ran at once for " << ms(o.to - o.from) << " ms\n";
  }
  for (const auto& g : r.regressions) {
    out << "EPOCH: " << g.later.host << " started with epoch " << epoch_text(g.later.epoch)
        << " after " << g.earlier.host << " had " << epoch_text(g.earlier.epoch) << "\n";
  }
  for (const auto& res : r.resolutions) {
    out << "fault " << res.fault << " on " << res.host << ": ";
    if (!res.hit_holder) {
      out << "not the holder\n";
      continue;
    }
    out << "holder stopped "
        << (res.fenced ? std::to_string(ms(*res.fenced)) + " ms" : std::string("never"))
        << ", successor started "
        << (res.takeover ? std::to_string(ms(*res.takeover)) + " ms" : std::string("never"))
        << " after the fault";
    if (res.handover) out << " (" << ms(*res.handover) << " ms after the holder stopped)";
    out << "\n";
  }
  return out.str();
}

std::string format_json(const Report& r) {
  nlohmann::json j;
  j["children"] = r.intervals.size();
  j["overlaps"] = r.overlaps.size();
  j["unexpected_overlaps"] = r.unexpected_overlaps();
  j["epoch_regressions"] = r.regressions.size();
  j["overlap_list"] = nlohmann::json::array();
  std::int64_t longest_pause_overlap = 0;
  for (const auto& o : r.overlaps) {
    j["overlap_list"].push_back({{"older", interval_json(o.older)},
                                 {"newer", interval_json(o.newer)},
                                 {"ms", ms(o.to - o.from)},
                                 {"after_pause", o.after_pause}});
    if (o.after_pause) longest_pause_overlap = std::max(longest_pause_overlap, o.to - o.from);
  }
  j["longest_pause_overlap_ms"] = ms(longest_pause_overlap);
  j["regression_list"] = nlohmann::json::array();
  for (const auto& g : r.regressions) {
    j["regression_list"].push_back(
        {{"earlier", interval_json(g.earlier)}, {"later", interval_json(g.later)}});
  }
  j["faults"] = nlohmann::json::array();
  std::map<std::string, std::vector<std::int64_t>> fenced, takeover, handover;
  std::map<std::string, int> cycles, hits;
  for (const auto& res : r.resolutions) {
    j["faults"].push_back({{"fault", res.fault},
                           {"host", res.host},
                           {"hit_holder", res.hit_holder},
                           {"healed_ms", optional_ms(res.healed)},
                           {"fenced_ms", optional_ms(res.fenced)},
                           {"takeover_ms", optional_ms(res.takeover)},
                           {"handover_ms", optional_ms(res.handover)}});
    ++cycles[res.fault];
    if (!res.hit_holder) continue;
    ++hits[res.fault];
    if (res.fenced) fenced[res.fault].push_back(*res.fenced);
    if (res.takeover) takeover[res.fault].push_back(*res.takeover);
    if (res.handover) handover[res.fault].push_back(*res.handover);
  }
  j["by_fault"] = nlohmann::json::object();
  for (const auto& [fault, n] : cycles) {
    j["by_fault"][fault] = {{"cycles", n},
                            {"hit_holder", hits[fault]},
                            {"fenced", summary(fenced[fault])},
                            {"takeover", summary(takeover[fault])},
                            {"handover", summary(handover[fault])}};
  }
  return j.dump(2);
}

}  // namespace hosts
