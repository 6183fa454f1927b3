#include "instance/record.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "instance/time.hpp"

namespace instance {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int kMaxDepth = 32;

std::unexpected<Error> bad_record(std::string_view why) {
  return fail(Errc::malformed, "not an instance record: " + std::string(why));
}

bool equal_fold(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](unsigned char x, unsigned char y) {
    return std::tolower(x) == std::tolower(y);
  });
}

// Go's decoder: an exact key match wins, else the last case-insensitive one.
const json* field(const json& object, std::string_view name) {
  if (const auto it = object.find(name); it != object.end()) return &*it;
  const json* found = nullptr;
  for (const auto& [key, value] : object.items()) {
    if (equal_fold(key, name)) found = &value;
  }
  return found;
}

// nlohmann's parser is iterative, but destroying a deeply nested value is
// not; a record is flat, so refuse deep nesting before parsing.
bool nesting_within_limit(std::string_view bytes) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : bytes) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

Result<WallTime> time_field(const json& object, std::string_view name, bool required) {
  const json* value = field(object, name);
  if (value == nullptr || value->is_null()) {
    if (required) return bad_record("no \"" + std::string(name) + "\"");
    return WallTime{};
  }
  if (!value->is_string()) return bad_record("\"" + std::string(name) + "\" is not a string");
  auto t = parse_rfc3339(value->get_ref<const std::string&>());
  if (!t) return bad_record("\"" + std::string(name) + "\": " + t.error().message);
  return *t;
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
  if (!record.mode.empty()) j["mode"] = record.mode;
  if (!record.state.empty()) j["state"] = record.state;
  // Invalid UTF-8 (a strange host name) is replaced, as Go's encoder does.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Record> decode_record(std::string_view bytes) {
  if (!nesting_within_limit(bytes)) return bad_record("nested too deeply");
  const json j = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_record("invalid JSON");
  if (!j.is_object()) return bad_record("not a JSON object");

  Record record;
  const json* id = field(j, "id");
  if (id == nullptr || !id->is_string() || id->get_ref<const std::string&>().empty()) {
    return bad_record("no \"id\" string");
  }
  record.id = id->get<std::string>();

  auto started = time_field(j, "started_at", false);
  if (!started) return std::unexpected(started.error());
  record.started_at = *started;
  auto expires = time_field(j, "expires_at", true);
  if (!expires) return std::unexpected(expires.error());
  record.expires_at = *expires;

  for (auto [name, target] : {std::pair{"host", &record.host}, {"boot_id", &record.boot_id},
                               {"pid_ns", &record.pid_ns}, {"mode", &record.mode},
                               {"state", &record.state}}) {
    if (const json* value = field(j, name); value != nullptr && !value->is_null()) {
      if (!value->is_string()) return bad_record("\"" + std::string(name) + "\" is not a string");
      *target = value->get<std::string>();
    }
  }
  if (const json* pid = field(j, "pid"); pid != nullptr && !pid->is_null()) {
    if (!pid->is_number_integer()) return bad_record("\"pid\" is not an integer");
    record.pid = pid->get<std::int64_t>();
  }
  if (const json* renewed = field(j, "renewed_at"); renewed != nullptr && !renewed->is_null()) {
    auto t = time_field(j, "renewed_at", false);
    if (!t) return std::unexpected(t.error());
    record.renewed_at = *t;
  }
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
