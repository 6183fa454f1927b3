// The safety rule of decode_record against a model of the original Go
// guard's decoder (docs/record-format.md). The input drives a generator of
// records: members with keys spelled as Go would or would not match them
// (case, the long s U+017F, escapes, near misses), duplicates, nulls, values
// of the wrong type, and times built from parts, some out of range or
// misspelled (lowercase t/z, leap second, hour 24, comma, escapes, odd
// offsets, long fractions). The generator knows what Go makes of each part,
// so it knows Go's result without running Go. Invariant:
//   * whenever decode_record reads a record, Go reads it too, with the same
//     id and the same expires_at instant. So a record Go counts as live or
//     unreadable is never expired here, and a record is skipped as "ours"
//     only when Go reads the same id.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "fuzz_check.hpp"
#include "instance/record.hpp"
#include "instance/time.hpp"

using instance::fuzz::shown;

namespace {

enum Field { kId, kStarted, kExpires, kNone };

struct Go {  // what Go's decoder has so far
  bool failed = false;
  std::string id;
  std::optional<__int128> expires_ns;  // beyond int64 on purpose
};

// A key for `field` and whether Go matches it to that field.
std::pair<std::string, bool> key_for(FuzzedDataProvider& in, Field field) {
  static const std::array<const char*, 4> names = {"id", "started_at", "expires_at", "other"};
  std::string name = names[field];
  switch (in.ConsumeIntegralInRange<int>(0, 6)) {
    case 0:
      return {name, true};
    case 1:
      for (char& c : name) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
      return {name, true};
    case 2:
      name[0] = static_cast<char>(name[0] - 32);
      return {name, true};
    case 3: {  // the long s folds to s
      const auto s = name.find('s');
      if (s == std::string::npos) return {name, true};
      return {name.replace(s, 1, "\xC5\xBF"), true};
    }
    case 4:
      return {"\\u00" +
                  std::string(name[0] == 'i'   ? "69"
                              : name[0] == 's' ? "73"
                                               : "65") +
                  name.substr(1),
              true};
    case 5:
      return {name + "x", false};
    default: {  // dotless i or dotted capital I: no match
      const auto i = name.find('i');
      if (i == std::string::npos) return {name + "_", false};
      return {name.replace(i, 1, in.ConsumeBool() ? "\xC4\xB1" : "\xC4\xB0"), false};
    }
  }
}

std::string two(int v) { return std::string(1, char('0' + v / 10)) + char('0' + v % 10); }

struct Time {
  std::string raw;                  // as written between the quotes
  std::string text;                 // unquoted, as Go reads it into a string field
  std::optional<__int128> instant;  // Go's, in ns; nullopt: Go refuses the time
};

// A time string, misspelled or not, and what Go makes of it.
Time time_for(FuzzedDataProvider& in) {
  using namespace std::chrono;
  const int year =
      in.ConsumeBool() ? in.ConsumeIntegralInRange(2020, 2030) : in.ConsumeIntegralInRange(0, 9999);
  const int month = in.ConsumeIntegralInRange(0, 13), day = in.ConsumeIntegralInRange(0, 32);
  const int hour = in.ConsumeIntegralInRange(0, 24), minute = in.ConsumeIntegralInRange(0, 60);
  const int second = in.ConsumeIntegralInRange(0, 60);
  const year_month_day ymd{std::chrono::year{year}, std::chrono::month{unsigned(month)},
                           std::chrono::day{unsigned(day)}};
  bool ok = ymd.ok() && hour < 24 && minute < 60 && second < 60;
  std::string text = std::to_string(10000 + year).substr(1) + "-" + two(month) + "-" + two(day);
  const bool lower_t = in.ConsumeIntegralInRange(0, 7) == 0;
  text += lower_t ? 't' : 'T';
  ok = ok && !lower_t;
  text += two(hour) + ":" + two(minute) + ":" + two(second);
  __int128 frac = 0;
  const int digits = in.ConsumeIntegralInRange(0, 12);
  if (digits > 0) {
    text += in.ConsumeIntegralInRange(0, 5) == 0 ? ',' : '.';  // Go takes both
    __int128 scale = 100'000'000;
    for (int i = 0; i < digits; ++i) {
      const int d = in.ConsumeIntegralInRange(0, 9);
      text += char('0' + d);
      frac += d * scale;  // digits past the ninth: scale is 0, truncated
      scale /= 10;
    }
  }
  int offset = 0;  // minutes east
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0:
      text += 'Z';
      break;
    case 1:
      text += 'z';
      ok = false;
      break;
    case 2:
      ok = false;
      break;  // no zone
    case 3: {
      const int oh = in.ConsumeIntegralInRange(0, 25), om = in.ConsumeIntegralInRange(0, 61);
      const bool minus = in.ConsumeBool();
      text += (minus ? "-" : "+") + two(oh) + ":" + two(om);
      ok = ok && oh <= 24 && om <= 60;  // recent time.Parse: range tests are > 24, > 60
      offset = (minus ? -1 : 1) * (oh * 60 + om);
      break;
    }
    case 4:
      text += "+" + two(in.ConsumeIntegralInRange(0, 23)) + "00";
      ok = false;
      break;
    default:
      text += "Z ";
      ok = false;
      break;
  }
  std::string raw = text;
  if (in.ConsumeIntegralInRange(0, 7) == 0) {  // an escape: Go parses the raw bytes
    const std::size_t at = in.ConsumeIntegralInRange<std::size_t>(0, raw.size() - 1);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(raw[at]));
    raw.replace(at, 1, buf);
    ok = false;
  }
  if (!ok) return {raw, text, std::nullopt};
  const __int128 secs = __int128{sys_days{ymd}.time_since_epoch().count()} * 86400 + hour * 3600 +
                        minute * 60 + second - offset * 60;
  return {raw, text, secs * 1'000'000'000 + frac};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Go go;
  std::string json = "{";
  const int members = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < members; ++i) {
    const Field wanted = static_cast<Field>(in.ConsumeIntegralInRange(0, 3));
    auto [key, matched] = key_for(in, wanted);
    const Field field = matched ? wanted : kNone;
    std::string value;
    switch (in.ConsumeIntegralInRange(0, 5)) {
      case 0:
        value = "null";
        break;
      case 1:
        value = "12";
        go.failed |= field != kNone;
        break;
      case 2:
        value = "[\"x\"]";
        go.failed |= field != kNone;
        break;
      case 3: {  // an id-like string: its text for Go
        static const std::array<std::pair<const char*, const char*>, 4> ids = {
            {{"me", "me"}, {"other", "other"}, {"\\u006de", "me"}, {"m\xff", "m\xEF\xBF\xBD"}}};
        const auto& [raw, text] = ids[in.ConsumeIntegralInRange<std::size_t>(0, ids.size() - 1)];
        value = "\"" + std::string(raw) + "\"";
        if (field == kId) go.id = text;
        if (field == kStarted || field == kExpires) go.failed = true;  // not a time
        break;
      }
      default: {
        const Time t = time_for(in);
        value = "\"" + t.raw + "\"";
        if (field == kId) go.id = t.text;
        if ((field == kStarted || field == kExpires) && !t.instant) go.failed = true;
        if (field == kExpires && t.instant) go.expires_ns = t.instant;
        break;
      }
    }
    json += (i ? "," : "") + ("\"" + key + "\":" + value);
  }
  json += "}";

  auto ours = instance::decode_record(json);
  if (!ours) return 0;  // unreadable: always allowed
  FUZZ_CHECK(!go.failed, "we read what Go refuses: " + shown(json));
  FUZZ_CHECK(ours->id == go.id,
             "id " + shown(ours->id) + ", Go's " + shown(go.id) + ": " + shown(json));
  FUZZ_CHECK(
      go.expires_ns && *go.expires_ns == ours->expires_at.time_since_epoch().count(),
      "expires_at " + instance::format_rfc3339(ours->expires_at) + " is not Go's: " + shown(json));
  return 0;
}
