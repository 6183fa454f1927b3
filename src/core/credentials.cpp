// Credential files and variables shared by the stores (instance/credentials.hpp).
#include "instance/credentials.hpp"

#include "instance/logger.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace instance {

Result<std::string> read_secret_file(const std::filesystem::path& path, std::string_view what) {
  const std::string name = "the " + std::string(what) + " file " + path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Errc::invalid, "cannot read " + name);
  std::string secret(kMaxSecretFileSize + 1, '\0');
  in.read(secret.data(), static_cast<std::streamsize>(secret.size()));
  if (in.bad()) return fail(Errc::invalid, "cannot read " + name);
  secret.resize(static_cast<std::size_t>(in.gcount()));
  if (secret.size() > kMaxSecretFileSize)
    return fail(Errc::invalid, name + " is larger than 64 KiB");
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) {
    secret.pop_back();
  }
  if (secret.empty()) return fail(Errc::invalid, name + " is empty");
  if (secret.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    return fail(Errc::invalid, name + " holds more than one line");
  }
  return secret;
}

std::optional<std::string> credential_env(const OpenOptions& options, std::string_view name) {
  std::optional<std::string> value;
  if (options.getenv) {
    value = options.getenv(name);
  } else if (const char* v = std::getenv(std::string(name).c_str())) {
    value = std::string(v);
  }
  if (value && value->empty()) return std::nullopt;
  return value;
}

std::vector<std::string_view> credential_variables(std::string_view store_url) {
  std::vector<std::string_view> out(kCredentialEnv.begin(), kCredentialEnv.end());
  const std::string_view scheme = store_url.substr(0, store_url.find("://"));
  auto is = [&](std::string_view name) {
    return scheme.size() == name.size() &&
           std::equal(scheme.begin(), scheme.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  if (store_url.find("://") != std::string_view::npos && (is("postgres") || is("postgresql"))) {
    out.insert(out.end(), kPostgresCredentialEnv.begin(), kPostgresCredentialEnv.end());
  }
  return out;
}

std::string shown_store_url(std::string_view url) {
  std::string out = redact_url(url);
  for (auto& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  }
  return out;
}

std::unexpected<Error> invalid_store_url(std::string_view url, std::string why) {
  return fail(Errc::invalid, "store URL " + shown_store_url(url) + ": " + std::move(why));
}

std::optional<std::string> percent_decode(std::string_view text) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || hex(text[i + 1]) < 0 || hex(text[i + 2]) < 0) return std::nullopt;
    out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
    i += 2;
  }
  return out;
}

}  // namespace instance
