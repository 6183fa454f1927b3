#include "instance/record.hpp"

#include <charconv>
#include <cstdint>
#include <expected>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "instance/time.hpp"

namespace instance {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Go's encoding/json refuses documents nested deeper than this.
constexpr std::size_t kGoMaxDepth = 10'000;
constexpr std::size_t kInvalid = std::string_view::npos;

std::unexpected<Error> bad_record(std::string_view why) {
  return fail(Errc::malformed, "not an instance record: " + std::string(why));
}

// ---- JSON as Go's encoding/json reads it (docs/record-format.md) ----------
//
// The syntax is RFC 8259 exactly as Go's scanner checks it: no byte order
// mark, no comments, no trailing commas, whitespace only space, tab, CR and
// LF, nesting at most 10000 deep, nothing after the value. Bytes >= 0x80 in
// strings are not checked (Go replaces invalid UTF-8 when it unquotes).

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::size_t skip_ws(std::string_view s, std::size_t i) {
  while (i < s.size() && is_ws(s[i])) ++i;
  return i;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits of a \u escape at s[i..i+4), or -1.
int hex4(std::string_view s, std::size_t i) {
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (std::size_t k = i; k < i + 4; ++k) {
    const int d = hex_digit(s[k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The end of the string literal starting at s[i] == '"', or kInvalid.
std::size_t scan_string(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"') return i + 1;
    if (c < 0x20) return kInvalid;
    if (c != '\\') continue;
    if (++i >= s.size()) return kInvalid;
    switch (s[i]) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        break;
      case 'u':
        if (hex4(s, i + 1) < 0) return kInvalid;
        i += 4;
        break;
      default:
        return kInvalid;
    }
  }
  return kInvalid;
}

// The end of the number starting at s[i], or kInvalid:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
std::size_t scan_number(std::string_view s, std::size_t i) {
  auto run = [&](std::size_t j) {
    while (j < s.size() && is_digit(s[j])) ++j;
    return j;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size() || !is_digit(s[i])) return kInvalid;
  i = s[i] == '0' ? i + 1 : run(i);
  if (i < s.size() && s[i] == '.') {
    if (i + 1 >= s.size() || !is_digit(s[i + 1])) return kInvalid;
    i = run(i + 1);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i >= s.size() || !is_digit(s[i])) return kInvalid;
    i = run(i);
  }
  return i;
}

// The end of the value starting at or after s[i] (after whitespace), or
// kInvalid. `depth` is how deep the value already sits. Iterative, so that
// hostile nesting cannot exhaust the stack.
std::size_t skip_value(std::string_view s, std::size_t i, std::size_t depth) {
  std::vector<char> closers;
  enum class Next { value, key, after } next = Next::value;
  while (true) {
    i = skip_ws(s, i);
    if (i >= s.size()) return kInvalid;
    const char c = s[i];
    if (next == Next::key) {
      if (c != '"' || (i = scan_string(s, i)) == kInvalid) return kInvalid;
      i = skip_ws(s, i);
      if (i >= s.size() || s[i] != ':') return kInvalid;
      ++i;
      next = Next::value;
    } else if (next == Next::value) {
      next = Next::after;
      if (c == '{' || c == '[') {
        if (depth + closers.size() + 1 > kGoMaxDepth) return kInvalid;
        closers.push_back(c == '{' ? '}' : ']');
        i = skip_ws(s, i + 1);
        if (i < s.size() && s[i] == closers.back()) {
          closers.pop_back();
          ++i;
        } else {
          next = c == '{' ? Next::key : Next::value;
        }
      } else if (c == '"') {
        i = scan_string(s, i);
      } else if (c == '-' || is_digit(c)) {
        i = scan_number(s, i);
      } else {
        const std::string_view rest = s.substr(i);
        std::size_t n = 0;
        for (std::string_view word : {"true", "false", "null"}) {
          if (rest.starts_with(word)) n = word.size();
        }
        if (n == 0) return kInvalid;
        i += n;
      }
      if (i == kInvalid) return kInvalid;
    } else {  // after a value
      if (closers.empty()) return i;
      if (c == ',') {
        next = closers.back() == '}' ? Next::key : Next::value;
        ++i;
      } else if (c == closers.back()) {
        closers.pop_back();
        ++i;
      } else {
        return kInvalid;
      }
    }
    if (next == Next::after && closers.empty()) return i;
  }
}

void append_utf8(std::string& out, std::uint32_t r) {
  if (r < 0x80) {
    out.push_back(static_cast<char>(r));
  } else if (r < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (r >> 6)));
    out.push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else if (r < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (r >> 12)));
    out.push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (r >> 18)));
    out.push_back(static_cast<char>(0x80 | ((r >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (r & 0x3F)));
  }
}

constexpr std::uint32_t kReplacement = 0xFFFD;

// Decodes one UTF-8 sequence at s[i] as Go's utf8.DecodeRune does: the rune
// and its length, or U+FFFD and length 1 for anything invalid (overlong,
// surrogate, beyond U+10FFFF, truncated).
std::pair<std::uint32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) -> unsigned { return static_cast<unsigned char>(s[k]); };
  const unsigned c = at(i);
  if (c < 0x80) return {c, 1};
  std::size_t n;
  unsigned lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return {kReplacement, 1};
  }
  if (i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi) return {kReplacement, 1};
  std::uint32_t r = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    if (k > 1 && (at(i + k) < 0x80 || at(i + k) > 0xBF)) return {kReplacement, 1};
    r = (r << 6) | (at(i + k) & 0x3F);
  }
  return {r, n};
}

// The text of a string literal (`raw` includes the quotes; scan_string
// checked it) as Go's unquote makes it: escapes decoded, a surrogate pair in
// two \u escapes joined, a lone surrogate and each invalid UTF-8 byte
// replaced by U+FFFD.
std::string go_unquote(std::string_view raw) {
  const std::string_view s = raw.substr(1, raw.size() - 2);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      const char e = s[i + 1];
      i += 2;
      switch (e) {
        case 'b':
          out.push_back('\b');
          continue;
        case 'f':
          out.push_back('\f');
          continue;
        case 'n':
          out.push_back('\n');
          continue;
        case 'r':
          out.push_back('\r');
          continue;
        case 't':
          out.push_back('\t');
          continue;
        case 'u':
          break;
        default:
          out.push_back(e);
          continue;  // '"', '\\', '/'
      }
      std::uint32_t r = static_cast<std::uint32_t>(hex4(s, i));
      i += 4;
      if (r >= 0xD800 && r < 0xE000) {
        const int low = i + 1 < s.size() && s[i] == '\\' && s[i + 1] == 'u' ? hex4(s, i + 2) : -1;
        if (r < 0xDC00 && low >= 0xDC00 && low < 0xE000) {
          r = 0x10000 + ((r - 0xD800) << 10) + (static_cast<std::uint32_t>(low) - 0xDC00);
          i += 6;
        } else {
          r = kReplacement;
        }
      }
      append_utf8(out, r);
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else {
      const auto [r, n] = decode_utf8(s, i);
      if (r == kReplacement && n == 1) {
        append_utf8(out, kReplacement);
      } else {
        out.append(s.substr(i, n));
      }
      i += n;
    }
  }
  return out;
}

// One member of the top-level object, in document order.
struct Member {
  std::string key;       // unquoted as Go unquotes it
  std::string_view raw;  // the value's bytes, quotes included for a string
};

// The members of the document's top-level object, or a reason why Go's
// decoder would refuse the document (a JSON `null` document is refused here
// too: it is no record).
std::expected<std::vector<Member>, std::string> top_level_members(std::string_view s) {
  const std::size_t end = skip_value(s, 0, 0);
  if (end == kInvalid) return std::unexpected("invalid JSON (as Go's encoding/json reads it)");
  if (skip_ws(s, end) != s.size()) return std::unexpected("text after the JSON value");
  std::size_t i = skip_ws(s, 0);
  if (s[i] != '{') return std::unexpected("not a JSON object");
  std::vector<Member> members;
  i = skip_ws(s, i + 1);
  if (s[i] == '}') return members;
  while (true) {
    const std::size_t key_end = scan_string(s, i);
    Member m{go_unquote(s.substr(i, key_end - i)), {}};
    const std::size_t value_start = skip_ws(s, skip_ws(s, key_end) + 1);  // past ':'
    const std::size_t value_end = skip_value(s, value_start, 1);
    m.raw = s.substr(value_start, value_end - value_start);
    members.push_back(std::move(m));
    i = skip_ws(s, value_end);
    if (s[i] == '}') return members;
    i = skip_ws(s, i + 1);  // past ','
  }
}

// Whether a JSON object key selects the struct field `name` (ASCII) in Go's
// decoder: an exact match, or equal under Unicode simple case folding. For an
// ASCII name that is ASCII case-insensitive equality, except that the Kelvin
// sign U+212A also matches 'k' and the long s U+017F also matches 's'.
bool go_key_matches(std::string_view key, std::string_view name) {
  std::size_t i = 0;
  for (const char n : name) {
    if (i >= key.size()) return false;
    const unsigned char k = static_cast<unsigned char>(key[i]);
    if (k < 0x80) {
      const bool letter = (n >= 'a' && n <= 'z') || (n >= 'A' && n <= 'Z');
      if (letter ? (k | 0x20) != (static_cast<unsigned char>(n) | 0x20) : k != n) return false;
      ++i;
      continue;
    }
    const auto [r, len] = decode_utf8(key, i);
    const char lower = static_cast<char>(n | 0x20);
    if (!((lower == 's' && r == 0x017F) || (lower == 'k' && r == 0x212A))) return false;
    i += len;
  }
  return i == key.size();
}

// Parses a time field's raw value as Go's time.Time.UnmarshalJSON does: the
// bytes between the quotes, escapes NOT decoded (a time with any escape is
// refused), then RFC 3339.
Result<WallTime> go_time(std::string_view name, std::string_view raw) {
  if (raw.front() != '"') return bad_record("\"" + std::string(name) + "\" is not a string");
  auto t = parse_rfc3339(raw.substr(1, raw.size() - 2));
  if (!t) return bad_record("\"" + std::string(name) + "\": " + t.error().message);
  return *t;
}

Result<std::string> string_field(std::string_view name, std::string_view raw) {
  if (raw.front() != '"') return bad_record("\"" + std::string(name) + "\" is not a string");
  return go_unquote(raw);
}

Result<std::int64_t> integer_field(std::string_view name, std::string_view raw) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
  if (ec != std::errc{} || end != raw.data() + raw.size()) {
    return bad_record("\"" + std::string(name) + "\" is not an integer");
  }
  return v;
}

}  // namespace

std::string encode_record(const Record& record) {
  ordered_json j;
  j["id"] = record.id;
  j["started_at"] = format_rfc3339(record.started_at);
  j["expires_at"] = format_rfc3339(record.expires_at);
  if (!record.host.empty()) j["host"] = record.host;
  if (record.pid) j["pid"] = *record.pid;
  if (record.renewed_at) j["renewed_at"] = format_rfc3339(*record.renewed_at);
  if (!record.boot_id.empty()) j["boot_id"] = record.boot_id;
  if (!record.pid_ns.empty()) j["pid_ns"] = record.pid_ns;
  if (!record.machine_id.empty()) j["machine_id"] = record.machine_id;
  if (!record.mode.empty()) j["mode"] = record.mode;
  if (!record.state.empty()) j["state"] = record.state;
  // Invalid UTF-8 (a strange host name) is replaced, as Go's encoder does.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Record> decode_record(std::string_view bytes) {
  auto members = top_level_members(bytes);
  if (!members) return bad_record(members.error());

  // Go's decoder visits the members in document order and decodes each into
  // the field its key selects, so of several keys for one field the last
  // wins; `null` leaves a field as it was; a value of the wrong type, or a
  // time Go cannot parse, fails the whole document.
  Record record;
  bool has_expiry = false;
  for (const Member& m : *members) {
    if (m.raw == "null") continue;
    const auto matches = [&](std::string_view name) { return go_key_matches(m.key, name); };
    if (matches("id")) {
      auto v = string_field("id", m.raw);
      if (!v) return std::unexpected(v.error());
      record.id = std::move(*v);
    } else if (matches("started_at") || matches("expires_at") || matches("renewed_at")) {
      const std::string_view name = matches("started_at")   ? "started_at"
                                    : matches("expires_at") ? "expires_at"
                                                            : "renewed_at";
      auto t = go_time(name, m.raw);
      if (!t) return std::unexpected(t.error());
      if (name == "started_at") {
        record.started_at = *t;
      } else if (name == "expires_at") {
        record.expires_at = *t;
        has_expiry = true;
      } else {
        record.renewed_at = *t;
      }
    } else if (matches("pid")) {
      auto v = integer_field("pid", m.raw);
      if (!v) return std::unexpected(v.error());
      record.pid = *v;
    } else {
      for (auto [name, target] : {std::pair{"host", &record.host},
                                  {"boot_id", &record.boot_id},
                                  {"pid_ns", &record.pid_ns},
                                  {"machine_id", &record.machine_id},
                                  {"mode", &record.mode},
                                  {"state", &record.state}}) {
        if (!matches(name)) continue;
        auto v = string_field(name, m.raw);
        if (!v) return std::unexpected(v.error());
        *target = std::move(*v);
      }
    }
  }
  // Stricter than the original, which reads these as "" and the zero time
  // (long expired): a record without them is unreadable, hence live.
  if (record.id.empty()) return bad_record("no \"id\" string");
  if (!has_expiry) return bad_record("no \"expires_at\"");
  return record;
}

const Key& records_prefix() {
  static const Key prefix = *Key::parse("instances");
  return prefix;
}

Result<Key> record_key(std::string_view id) {
  if (id.empty()) return fail(Errc::invalid, "an instance id must not be empty");
  return records_prefix().child(id);
}

}  // namespace instance
