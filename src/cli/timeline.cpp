#include "timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "instance/sdk/text.hpp"
#include "instance/time.hpp"

namespace instance::cli {

namespace {

// Text for SVG character data and attribute values.
std::string xml(std::string_view text) { return xml_text(printable(text, 200)); }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// A tick step of 1, 2 or 5 times a power of ten seconds giving about 8 ticks.
double tick_step(double span) {
  const double raw = std::max(span / 8, 1e-3);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

std::string tick_label(double s) {
  char buf[32];
  if (s == 0) return "0";
  if (std::abs(s) < 1)
    std::snprintf(buf, sizeof buf, "%gms", s * 1000);
  else if (std::abs(s) < 120)
    std::snprintf(buf, sizeof buf, "%gs", s);
  else if (std::abs(s) < 7200)
    std::snprintf(buf, sizeof buf, "%gm", s / 60);
  else
    std::snprintf(buf, sizeof buf, "%gh", s / 3600);
  return buf;
}

struct Style {
  const char* fill;
  const char* label;
};

Style style_of(const HistoryReport& r, std::size_t i) {
  if (r.inferred_end[i]) return {"#9e9e9e", "no end written"};
  const std::string& end = r.tenures[i].end;
  if (end.empty()) return {"#1e88e5", "holding"};
  if (end == "stood_down") return {"#43a047", "stood down"};
  if (end == "lost") return {"#fb8c00", "lost"};
  return {"#8e24aa", "crashed"};
}

}  // namespace

std::string timeline_svg(const HistoryReport& r, const std::string& store, WallTime now) {
  constexpr double kLeft = 150, kRight = 30, kWidth = 1100, kRow = 34, kBar = 22, kTop = 60;
  const std::size_t n = r.tenures.size();
  WallTime from = now, to = now;
  if (n > 0) {
    from = r.tenures.front().claimed_at;
    to = from;
    for (std::size_t i = 0; i < n; ++i) to = std::max(to, r.end[i].value_or(now));
  }
  const double span = std::max(seconds(to - from), 1e-3);
  const double plot = kWidth - kLeft - kRight;
  auto x = [&](WallTime t) { return kLeft + plot * seconds(t - from) / span; };

  // Rows: one per host in order of first appearance; a host whose tenures
  // overlap gets a second lane, and so on. When every tenure ran on one host
  // and a few ids took turns (fixed ids, as a test's or a service's), one
  // row per id shows the hand-overs better.
  std::map<std::string, int> ids, host_names;
  for (const Tenure& t : r.tenures) {
    ++ids[t.id];
    ++host_names[t.host];
  }
  const bool by_id = host_names.size() == 1 && ids.size() <= 12;
  std::map<std::string, std::vector<WallTime>> lanes_end;  // per row name, when each lane frees
  std::vector<std::size_t> row(n);
  std::vector<std::string> row_host;
  std::map<std::string, std::vector<std::size_t>> host_rows;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string named = r.tenures[i].host.empty() ? "(unknown host)" : r.tenures[i].host;
    const std::string host = by_id ? named + ": " + r.tenures[i].id : named;
    auto& lanes = lanes_end[host];
    auto& rows_of = host_rows[host];
    std::size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > r.tenures[i].claimed_at) ++lane;
    if (lane == lanes.size()) {
      lanes.push_back(WallTime{});
      rows_of.push_back(row_host.size());
      row_host.push_back(lanes.size() == 1 ? host : host + " (" + std::to_string(lane + 1) + ")");
    }
    lanes[lane] = r.end[i].value_or(now);
    row[i] = rows_of[lane];
  }
  const double rows_height = kRow * static_cast<double>(std::max<std::size_t>(row_host.size(), 1));
  const double axis_y = kTop + rows_height + 8;
  const double height = axis_y + 110;

  std::ostringstream svg;
  svg << R"(<?xml version="1.0" encoding="UTF-8"?>)" << '\n'
      << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << kWidth << R"(" height=")"
      << num(height) << R"(" viewBox="0 0 )" << kWidth << ' ' << num(height)
      << R"(" font-family="DejaVu Sans, Verdana, sans-serif" font-size="12">)" << '\n'
      << R"(<rect width="100%" height="100%" fill="#ffffff"/>)" << '\n';
  svg << R"(<text x="10" y="22" font-size="15" font-weight="bold">)" << xml("Tenures of " + store)
      << "</text>\n";
  svg << R"(<text x="10" y="42" fill="#444">)"
      << xml(std::to_string(n) + " tenures from " + format_rfc3339(from) + " to " +
             format_rfc3339(to) + "; " + std::to_string(r.overlaps.size()) + " overlaps, " +
             std::to_string(r.epoch_regressions.size()) + " epochs that did not grow")
      << "</text>\n";

  // Rows and their host labels.
  for (std::size_t k = 0; k < row_host.size(); ++k) {
    const double y = kTop + kRow * static_cast<double>(k);
    if (k % 2 == 0) {
      svg << R"(<rect x=")" << kLeft << R"(" y=")" << num(y) << R"(" width=")" << num(plot)
          << R"(" height=")" << kRow << R"(" fill="#f5f5f5"/>)" << '\n';
    }
    svg << R"(<text x=")" << kLeft - 8 << R"(" y=")" << num(y + kRow / 2 + 4)
        << R"(" text-anchor="end">)" << xml(row_host[k]) << "</text>\n";
  }

  // The scale.
  const double step = tick_step(span);
  svg << R"(<line x1=")" << kLeft << R"(" y1=")" << num(axis_y) << R"(" x2=")" << num(kLeft + plot)
      << R"(" y2=")" << num(axis_y) << R"(" stroke="#333"/>)" << '\n';
  for (double s = 0; s <= span + step / 1000; s += step) {
    const double tx = kLeft + plot * s / span;
    svg << R"(<line x1=")" << num(tx) << R"(" y1=")" << kTop << R"(" x2=")" << num(tx)
        << R"(" y2=")" << num(axis_y + 5) << R"(" stroke="#ddd"/>)" << '\n'
        << R"(<text x=")" << num(tx) << R"(" y=")" << num(axis_y + 18)
        << R"(" text-anchor="middle" fill="#333">)" << tick_label(s) << "</text>\n";
  }

  // Bars.
  for (std::size_t i = 0; i < n; ++i) {
    const Tenure& t = r.tenures[i];
    const Style st = style_of(r, i);
    const double x0 = x(t.claimed_at);
    const double w = std::max(x(r.end[i].value_or(now)) - x0, 4.0);  // a crash seen at once
    const double y = kTop + kRow * static_cast<double>(row[i]) + (kRow - kBar) / 2;
    std::string tip = t.id + " (" + t.mode +
                      (t.epoch ? ", epoch " + std::to_string(*t.epoch) : "") + ")\nclaimed " +
                      format_rfc3339(t.claimed_at) + "\n" + st.label +
                      (r.end[i] ? " " + format_rfc3339(*r.end[i]) : "") + "\nheld " +
                      format_duration(r.end[i].value_or(now) - t.claimed_at) +
                      (t.reason.empty() ? "" : "\n" + t.reason);
    svg << R"(<g class="tenure"><title>)" << xml(tip) << "</title>"
        << R"(<rect x=")" << num(x0) << R"(" y=")" << num(y) << R"(" width=")" << num(w)
        << R"(" height=")" << kBar << R"(" rx="3" fill=")" << st.fill << R"(" stroke="#ffffff"/>)";
    const std::string label = t.epoch ? t.id + " #" + std::to_string(*t.epoch) : t.id;
    if (w > 7.0 * static_cast<double>(label.size()) + 6) {
      svg << R"(<text x=")" << num(x0 + 4) << R"(" y=")" << num(y + kBar / 2 + 4)
          << R"(" fill="#ffffff">)" << xml(label) << "</text>";
    }
    svg << "</g>\n";
  }

  // Overlaps: a red band across every row where two tenures held at once.
  for (const auto& o : r.overlaps) {
    const WallTime start = r.tenures[o.second].claimed_at;
    const double x0 = x(start);
    const double w = std::max(x(start + o.amount) - x0, 2.0);
    svg << R"(<g class="overlap"><title>)"
        << xml("OVERLAP " + format_duration(o.amount) + ": " + r.tenures[o.first].id + " and " +
               r.tenures[o.second].id)
        << "</title>"
        << R"(<rect x=")" << num(x0) << R"(" y=")" << kTop << R"(" width=")" << num(w)
        << R"(" height=")" << num(rows_height)
        << R"(" fill="#e53935" fill-opacity="0.35" stroke="#b71c1c"/></g>)" << '\n';
  }

  // Hand-over gaps, under the axis: a bracket from one end to the next claim.
  for (std::size_t i = 1; i < n; ++i) {
    if (!r.gap_before[i]) continue;
    const double x1 = x(r.tenures[i].claimed_at);
    const double x0 = x(r.tenures[i].claimed_at - *r.gap_before[i]);
    const double y = axis_y + 30 + static_cast<double>(i % 2) * 12;
    svg << R"(<g class="gap"><title>)"
        << xml("gap before " + r.tenures[i].id + ": " + format_duration(*r.gap_before[i]))
        << "</title>"
        << R"(<line x1=")" << num(x0) << R"(" y1=")" << num(y) << R"(" x2=")"
        << num(std::max(x1, x0 + 1)) << R"(" y2=")" << num(y)
        << R"(" stroke="#616161" stroke-width="3"/></g>)" << '\n';
  }

  // The legend.
  const double ly = height - 22;
  double lx = 10;
  const std::vector<std::pair<const char*, const char*>> legend{
      {"#43a047", "stood down"}, {"#fb8c00", "lost"},           {"#8e24aa", "crashed"},
      {"#1e88e5", "holding"},    {"#9e9e9e", "no end written"}, {"#e53935", "overlap"}};
  for (const auto& [fill, label] : legend) {
    svg << R"(<rect x=")" << num(lx) << R"(" y=")" << num(ly - 11)
        << R"(" width="14" height="14" fill=")" << fill << R"("/><text x=")" << num(lx + 19)
        << R"(" y=")" << num(ly) << R"(">)" << label << "</text>\n";
    lx += 30 + 7.2 * static_cast<double>(std::string_view(label).size());
  }
  svg << R"(<line x1=")" << num(lx) << R"(" y1=")" << num(ly - 4) << R"(" x2=")" << num(lx + 20)
      << R"(" y2=")" << num(ly - 4) << R"(" stroke="#616161" stroke-width="3"/><text x=")"
      << num(lx + 25) << R"(" y=")" << num(ly) << R"(">hand-over gap (under the axis)</text>)"
      << '\n';
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace instance::cli
