// URL -> store: parses the URL into the store's options and builds it.
#include "instance/open_store.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "instance/credentials.hpp"  // percent_decode
#include "instance/stores/directory.hpp"
#include "instance/stores/memory.hpp"
#ifdef INSTANCE_HAVE_WEBDAV
#include "instance/stores/webdav.hpp"
#endif
#ifdef INSTANCE_HAVE_ETCD
#include "instance/stores/etcd.hpp"
#endif
#ifdef INSTANCE_HAVE_CS3
#include "instance/stores/cs3.hpp"
#endif
#ifdef INSTANCE_HAVE_POSTGRES
#include "instance/stores/postgres.hpp"
#endif
#ifdef INSTANCE_HAVE_REDIS
#include "instance/stores/redis.hpp"
#endif

namespace instance {
namespace {

std::string_view scheme_of(std::string_view url) {
  const auto colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0) return {};
  const auto scheme = url.substr(0, colon);
  for (char c : scheme) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '-' || c == '.';
    if (!ok) return {};
  }
  return scheme;
}

// Percent-decodes a file URL's path; refuses %00 and malformed escapes.
Result<std::string> decode_path(std::string_view path) {
  auto out = percent_decode(path);
  if (!out) return fail(Errc::invalid, "malformed percent escape in file URL path");
  if (out->find('\0') != std::string::npos) {
    return fail(Errc::invalid, "file URL path contains %00");
  }
  return std::move(*out);
}

Result<std::shared_ptr<Store>> open_directory(std::string_view url) {
  std::string path;
  if (url.size() >= 7 && std::equal(url.begin(), url.begin() + 7, "file://", [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == b;
      })) {
    auto rest = url.substr(7);
    if (!rest.starts_with('/')) {
      if (rest.starts_with("localhost/")) {
        rest.remove_prefix(9);
      } else {
        return fail(Errc::invalid,
                    "file URL must be file:///absolute/path (no host): " + redact_url(url));
      }
    }
    if (rest.find_first_of("?#") != std::string_view::npos) {
      return fail(Errc::invalid, "file URL must not have a query or fragment");
    }
    auto decoded = decode_path(rest);
    if (!decoded) return std::unexpected(decoded.error());
    path = std::move(*decoded);
  } else {
    path = std::string(url);
  }
  if (path.empty()) return fail(Errc::invalid, "empty store path");
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path, ec);
  if (ec) return fail(Errc::invalid, "cannot resolve store path " + path + ": " + ec.message());
  return make_directory_store({.root = absolute.lexically_normal()});
}

}  // namespace

Result<std::shared_ptr<Store>> open_store(std::string_view url, const OpenOptions& options) {
  std::string scheme(scheme_of(url));  // schemes are case-insensitive (RFC 3986)
  std::ranges::transform(scheme, scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme.empty() || scheme == "file") return open_directory(url);
  if (scheme == "memory") return make_memory_store();
#ifdef INSTANCE_HAVE_WEBDAV
  if (scheme == "webdav" || scheme == "webdavs" || scheme == "opencloud") {
    auto parsed = parse_webdav_url(url, options);
    if (!parsed) return std::unexpected(parsed.error());
    return make_webdav_store(std::move(*parsed));
  }
#endif
#ifdef INSTANCE_HAVE_ETCD
  if (scheme == "etcd" || scheme == "etcds") {
    auto parsed = parse_etcd_url(url, options);
    if (!parsed) return std::unexpected(parsed.error());
    return make_etcd_store(std::move(*parsed));
  }
#endif
#ifdef INSTANCE_HAVE_CS3
  if (scheme == "cs3" || scheme == "cs3s" || scheme == "opencloud+cs3" ||
      scheme == "opencloud+cs3s") {
    auto parsed = parse_cs3_url(url, options);
    if (!parsed) return std::unexpected(parsed.error());
    return make_cs3_store(std::move(*parsed));
  }
#endif
#ifdef INSTANCE_HAVE_POSTGRES
  if (scheme == "postgres" || scheme == "postgresql") {
    auto parsed = parse_postgres_url(url, options);
    if (!parsed) return std::unexpected(parsed.error());
    return make_postgres_store(std::move(*parsed));
  }
#endif
#ifdef INSTANCE_HAVE_REDIS
  if (scheme == "redis" || scheme == "rediss") {
    auto parsed = parse_redis_url(url, options);
    if (!parsed) return std::unexpected(parsed.error());
    return make_redis_store(std::move(*parsed));
  }
#endif
  (void)options;
  std::string supported = "file://, memory:";
#ifdef INSTANCE_HAVE_WEBDAV
  supported += ", webdav://, webdavs://, opencloud://";
#endif
#ifdef INSTANCE_HAVE_ETCD
  supported += ", etcd://, etcds://";
#endif
#ifdef INSTANCE_HAVE_CS3
  supported += ", cs3://, cs3s://, opencloud+cs3://, opencloud+cs3s://";
#endif
#ifdef INSTANCE_HAVE_POSTGRES
  supported += ", postgres://, postgresql://";
#endif
#ifdef INSTANCE_HAVE_REDIS
  supported += ", redis://";
#endif
  return fail(Errc::invalid, "unsupported store URL scheme \"" + std::string(scheme) + "\" in " +
                                 redact_url(url) + " (this build supports " + supported + ")");
}

}  // namespace instance
