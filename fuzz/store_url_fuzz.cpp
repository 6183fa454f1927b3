// Store URLs. The input is a URL.
//   * memory:, file:// URLs, plain paths and the rest go to open_store: never crashes or
//     throws; memory: always opens; a failure is Errc::invalid, or
//     Errc::unsupported naming the missing store module of a family this
//     build leaves out ("etcd:/..."). (Building a directory store touches no
//     file; nothing here writes.)
//   * webdav://, webdavs://, opencloud:// URLs go to parse_webdav_url, once
//     without credentials and once with a password (and user) from the
//     environment. A failure is Errc::invalid with a printable message that
//     never holds the environment's secret nor a password written in the URL;
//     a success gives an http(s) base URL without user info, spaces or
//     control bytes, and the environment's secret only for basic auth.
//   * redis:// and rediss:// URLs (when the Redis store is built) go to
//     parse_redis_url the same two ways, with the same checks on failures; a
//     success never came from a URL with a password, holds the environment's
//     password only when it was given, and describes itself printably without
//     user info.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_check.hpp"
#include "instance/open_store.hpp"
#include "instance/stores/webdav.hpp"
#ifdef INSTANCE_HAVE_REDIS
#include "instance/stores/redis.hpp"
#endif

using instance::fuzz::printable_ascii;
using instance::fuzz::shown;

namespace {

constexpr std::string_view kEnvSecret = "Env-Secret-4f9a";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Where the password written in the URL's user info lies
// ("scheme://user:PASSWORD@..."): [first, last) in `url`, as shown() and
// redact_url() see it (from "://" to the last '@'); nullopt when there is none.
std::optional<std::pair<std::size_t, std::size_t>> password_span(std::string_view url) {
  const auto start = url.find("://");
  if (start == std::string_view::npos) return std::nullopt;
  const auto at = url.rfind('@');
  if (at == std::string_view::npos || at < start + 3) return std::nullopt;
  const auto colon = url.substr(start + 3, at - start - 3).find(':');
  if (colon == std::string_view::npos || start + 3 + colon + 1 == at) return std::nullopt;
  return std::pair{start + 3 + colon + 1, at};
}

// The same URL with every letter and digit of the password changed to
// another of the same kind (hex digits stay hex digits), so the URL parses
// the same way. A message that does not show the password is the same for
// both URLs.
std::string with_other_password(std::string_view url, std::pair<std::size_t, std::size_t> span) {
  std::string out(url);
  for (std::size_t i = span.first; i < span.second; ++i) {
    char& c = out[i];
    if (c >= '0' && c <= '9')
      c = static_cast<char>('0' + (c - '0' + 1) % 10);
    else if (c >= 'a' && c <= 'f')
      c = static_cast<char>('a' + (c - 'a' + 1) % 6);
    else if (c >= 'A' && c <= 'F')
      c = static_cast<char>('A' + (c - 'A' + 1) % 6);
    else if (c >= 'g' && c <= 'z')
      c = static_cast<char>('g' + (c - 'g' + 1) % 20);
    else if (c >= 'G' && c <= 'Z')
      c = static_cast<char>('G' + (c - 'G' + 1) % 20);
  }
  return out;
}

// A refused URL: Errc::invalid, with a printable message that holds neither
// the environment's secret nor anything that depends on the URL's password.
template <typename Parse>
void check_refusal(std::string_view url, const instance::Error& error, Parse parse) {
  const std::string& message = error.message;
  FUZZ_CHECK(error.code == instance::Errc::invalid,
             "error code for " + shown(url) + ": " + shown(message));
  FUZZ_CHECK(printable_ascii(message),
             "unprintable message for " + shown(url) + ": " + shown(message));
  // Unless the URL spells the secret itself, or all of it but the first
  // letter: an escaped byte before it ("\x0E") supplies that 'E'.
  if (url.find(kEnvSecret.substr(1)) == std::string_view::npos) {
    FUZZ_CHECK(message.find(kEnvSecret) == std::string::npos,
               "the environment's secret in " + shown(message));
  }
  if (auto span = password_span(url)) {
    const std::string other = with_other_password(url, *span);
    auto again = parse(other);
    FUZZ_CHECK(!again && again.error().message == message,
               "the message depends on the URL's password: " + shown(url) + " -> " +
                   shown(message) + "; " + shown(other) + " -> " +
                   (again ? "accepted" : shown(again.error().message)));
  }
}

void check_webdav(std::string_view url, bool with_env) {
  instance::OpenOptions options;
  options.getenv = [with_env](std::string_view name) -> std::optional<std::string> {
    if (!with_env) return std::nullopt;
    if (name == "INSTANCE_GUARD_PASSWORD") return std::string(kEnvSecret);
    if (name == "INSTANCE_GUARD_USER") return std::string("fuzz-user");
    return std::nullopt;
  };
  auto parsed = instance::parse_webdav_url(url, options);
  if (!parsed) {
    check_refusal(url, parsed.error(),
                  [&](std::string_view u) { return instance::parse_webdav_url(u, options); });
    return;
  }
  const std::string& base = parsed->base_url;
  FUZZ_CHECK(base.starts_with("http://") || base.starts_with("https://"),
             "base URL " + shown(base) + " from " + shown(url));
  for (unsigned char c : base) {
    FUZZ_CHECK(c > 0x20 && c < 0x7F, "space or control byte in base URL " + shown(base));
  }
  const auto authority_start = base.find("://") + 3;
  const auto authority = std::string_view(base)
                             .substr(authority_start)
                             .substr(0, std::string_view(base).substr(authority_start).find('/'));
  FUZZ_CHECK(authority.find('@') == std::string_view::npos,
             "user info in base URL " + shown(base) + " from " + shown(url));
  FUZZ_CHECK(!password_span(url), "a password in the URL was accepted: " + shown(url));
  switch (parsed->auth) {
    case instance::WebDavAuth::none:
      FUZZ_CHECK(parsed->secret.empty(), "a secret without auth for " + shown(url));
      break;
    case instance::WebDavAuth::basic:
      FUZZ_CHECK(with_env && parsed->secret == kEnvSecret && !parsed->user.empty(),
                 "basic auth without the environment's credentials for " + shown(url));
      break;
    case instance::WebDavAuth::bearer:
      FUZZ_CHECK(false, "bearer auth without a token for " + shown(url));
      break;
  }
}

#ifdef INSTANCE_HAVE_REDIS
void check_redis(std::string_view url, bool with_env) {
  instance::OpenOptions options;
  options.getenv = [with_env](std::string_view name) -> std::optional<std::string> {
    if (!with_env) return std::nullopt;
    if (name == "INSTANCE_GUARD_PASSWORD") return std::string(kEnvSecret);
    return std::nullopt;
  };
  auto parsed = instance::parse_redis_url(url, options);
  if (!parsed) {
    check_refusal(url, parsed.error(),
                  [&](std::string_view u) { return instance::parse_redis_url(u, options); });
    return;
  }
  FUZZ_CHECK(!password_span(url), "a password in the URL was accepted: " + shown(url));
  FUZZ_CHECK(parsed->password == (with_env ? std::string(kEnvSecret) : std::string()),
             "a password not from the environment for " + shown(url));
  const std::string described = instance::describe_redis(*parsed);
  FUZZ_CHECK(printable_ascii(described) && described.find('@') == std::string::npos &&
                 described.find(' ') == std::string::npos,
             "describe " + shown(described) + " for " + shown(url));
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  const std::string scheme = lower(url.substr(0, url.find(':')));
  if (scheme == "webdav" || scheme == "webdavs" || scheme == "opencloud") {
    check_webdav(url, false);
    check_webdav(url, true);
    return 0;
  }
#ifdef INSTANCE_HAVE_REDIS
  if (scheme == "redis" || scheme == "rediss") {
    check_redis(url, false);
    check_redis(url, true);
    return 0;
  }
#endif
  if (url.find("://") != std::string_view::npos && scheme != "file") return 0;  // other stores
  auto store = instance::open_store(url);
  // Scheme names are matched case-sensitively by open_store (parse_webdav_url
  // lowercases them): only "memory:" itself is sure to open.
  if (url.starts_with("memory:")) {
    FUZZ_CHECK(store.has_value() && *store != nullptr, "memory: did not open: " + shown(url));
  }
  if (!store) {
    // Invalid, or (a scheme of a family this build did not link in, and no
    // module of it where modules are loaded from) unsupported, saying so.
    const auto& error = store.error();
    const bool no_module = error.code == instance::Errc::unsupported &&
                           (error.message.find("store module") != std::string::npos);
    FUZZ_CHECK(error.code == instance::Errc::invalid || no_module,
               "error code for " + shown(url) + ": " + shown(error.message));
  } else {
    FUZZ_CHECK(*store != nullptr, "null store for " + shown(url));
  }
  return 0;
}
