#include "codec.hpp"

#include <array>
#include <charconv>

namespace instance::etcd {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int, 256> decode_table() {
  std::array<int, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kAlphabet[i])] = i;
  return table;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto n = (std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                   (std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                   std::uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (rest == 2) n |= std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  static constexpr auto kTable = decode_table();
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + static_cast<std::size_t>(j)];
      if (c == '=' && last && j >= 2) {
        ++pad;
        v[j] = 0;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[j] = kTable[static_cast<unsigned char>(c)];
      if (v[j] < 0) return std::nullopt;
    }
    const std::uint32_t n =
        (static_cast<std::uint32_t>(v[0]) << 18) | (static_cast<std::uint32_t>(v[1]) << 12) |
        (static_cast<std::uint32_t>(v[2]) << 6) | static_cast<std::uint32_t>(v[3]);
    // Unused bits must be zero: one spelling per byte string.
    if ((pad == 1 && (n & 0xFF) != 0) || (pad == 2 && (n & 0xFFFF) != 0)) return std::nullopt;
    out.push_back(static_cast<char>((n >> 16) & 0xFF));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xFF));
  }
  return out;
}

std::string prefix_range_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xFF) end.pop_back();
  if (end.empty()) return std::string(1, '\0');
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

std::optional<std::int64_t> int64_field(const nlohmann::json& object, std::string_view name) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (!it->is_string()) return std::nullopt;
  const auto& text = it->get_ref<const std::string&>();
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_revision(std::string_view text) {
  std::int64_t value = 0;
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

std::optional<GatewayError> parse_gateway_error(std::string_view body) {
  const auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto code = j.find("code");
  if (code == j.end() || !code->is_number_integer()) return std::nullopt;
  GatewayError out;
  const int n = code->get<int>();
  out.code = n >= 0 && n <= 16 ? static_cast<Grpc>(n) : Grpc::unknown;
  for (const char* field : {"message", "error"}) {
    if (const auto m = j.find(field);
        m != j.end() && m->is_string() && !m->get_ref<const std::string&>().empty()) {
      out.message = m->get<std::string>();
      break;
    }
  }
  return out;
}

Errc map_grpc(const GatewayError& error) {
  switch (error.code) {
    case Grpc::ok:
      return Errc::internal;  // not a failure: a caller bug
    case Grpc::not_found:
      return Errc::not_found;
    case Grpc::already_exists:
      return Errc::already_exists;
    case Grpc::permission_denied:
    case Grpc::unauthenticated:
      return Errc::permission;
    case Grpc::resource_exhausted:
      return Errc::no_space;
    case Grpc::deadline_exceeded:
      return Errc::timeout;
    case Grpc::unimplemented:
      return Errc::unsupported;
    case Grpc::invalid_argument:
      // etcd 3.4 reports a wrong password or missing user this way.
      if (error.message.find("authentication failed") != std::string::npos ||
          error.message.find("user name is empty") != std::string::npos ||
          error.message.find("user name not found") != std::string::npos) {
        return Errc::permission;
      }
      return Errc::invalid;
    case Grpc::failed_precondition:
      // A member that lost its leadership mid-request: another may serve it.
      if (error.message.find("not leader") != std::string::npos) return Errc::unavailable;
      return Errc::invalid;
    case Grpc::out_of_range:
      return Errc::invalid;
    case Grpc::cancelled:
    case Grpc::unknown:
    case Grpc::aborted:
    case Grpc::internal:
    case Grpc::unavailable:
    case Grpc::data_loss:
      return Errc::unavailable;
  }
  return Errc::unavailable;
}

bool is_retryable(const GatewayError& error) {
  return error.code == Grpc::unavailable || error.code == Grpc::deadline_exceeded ||
         error.code == Grpc::aborted ||
         (error.code == Grpc::failed_precondition &&
          error.message.find("not leader") != std::string::npos);
}

}  // namespace instance::etcd
