// parse_postgres_url: store URLs and credentials into PostgresStoreOptions.
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "instance/sdk/credentials.hpp"
#include "instance/stores/postgres.hpp"
#include "sql.hpp"

namespace instance {
namespace {

constexpr std::string_view kPasswordAdvice =
    "give it with --password-file or INSTANCE_GUARD_PASSWORD (or libpq's PGPASSWORD, PGPASSFILE "
    "or ~/.pgpass)";

// The URL for a message: the query dropped too (it may hold libpq settings
// nobody needs to see).
std::string shown(std::string_view url) {
  return shown_store_url(url.substr(0, url.find_first_of("?#")));
}

std::unexpected<Error> invalid(std::string_view url, std::string why) {
  return fail(Errc::invalid, "store URL " + shown(url) + ": " + std::move(why));
}

struct ConninfoDeleter {
  void operator()(PQconninfoOption* o) const noexcept { PQconninfoFree(o); }
};

}  // namespace

Result<PostgresStoreOptions> parse_postgres_url(std::string_view url, const OpenOptions& options) {
  const auto scheme_end = url.find("://");
  std::string scheme(url.substr(0, scheme_end == std::string_view::npos ? 0 : scheme_end));
  std::ranges::transform(scheme, scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "postgres" && scheme != "postgresql") {
    return invalid(url, "expected postgres:// or postgresql://");
  }
  const std::string_view rest = url.substr(scheme_end + 3);
  if (auto why = password_in_url(url, kPasswordAdvice)) return invalid(url, *why);
  for (unsigned char c : rest) {
    if (c <= 0x20 || c >= 0x7F) return invalid(url, "spaces or control characters");
  }
  if (rest.find('#') != std::string_view::npos) return invalid(url, "a fragment is not allowed");

  // Our own parameter (table) out of the query; libpq refuses unknown ones.
  PostgresStoreOptions out;
  const auto question = rest.find('?');
  std::string libpq_url = "postgresql://" + std::string(rest.substr(0, question));
  bool sslmode_given = false;
  if (question != std::string_view::npos) {
    std::string_view query = rest.substr(question + 1);
    std::string kept;
    while (!query.empty()) {
      const auto amp = query.find('&');
      const auto pair = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
      if (pair.empty()) continue;
      const auto eq = pair.find('=');
      auto name = percent_decode(pair.substr(0, eq));
      auto value =
          percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1));
      if (!name || !value) return invalid(url, "bad percent escape in the query");
      if (*name == "password" || *name == "sslpassword") {
        return invalid(url,
                       "a password in the URL is refused (it would show in ps, shell "
                       "history and logs); " +
                           std::string(kPasswordAdvice));
      }
      if (*name == "table") {
        out.table = *value;
        continue;
      }
      if (*name == "sslmode") sslmode_given = true;
      kept += (kept.empty() ? "" : "&") + std::string(pair);
    }
    if (!kept.empty()) libpq_url += "?" + kept;
  }
  if (auto ok = postgres::check_table_name(out.table); !ok) return invalid(url, ok.error().message);

  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, ConninfoDeleter> parsed(
      PQconninfoParse(libpq_url.c_str(), &error));
  if (!parsed) {
    std::string why = error != nullptr ? error : "libpq cannot parse it";
    PQfreemem(error);
    while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
    return invalid(url, why);
  }
  for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr || *o->val == '\0') continue;
    const std::string_view keyword = o->keyword;
    if (keyword == "password" || keyword == "sslpassword") {
      return invalid(url, "a password in the URL is refused; " + std::string(kPasswordAdvice));
    }
    if (keyword == "target_session_attrs") {
      const std::string_view value = o->val;
      if (value != "read-write" && value != "primary" && value != "any") {
        return invalid(url, "target_session_attrs=" + std::string(value) +
                                " makes no sense for a guard, which writes its lease: give "
                                "read-write (the default with several hosts), primary or any");
      }
    }
    out.params.emplace_back(keyword, o->val);
  }
  // Several hosts: libpq tries them in turn; a guard needs the one that takes
  // writes, so read-write unless the URL says otherwise.
  const bool several = std::ranges::any_of(out.params, [](const auto& p) {
    return (p.first == "host" || p.first == "hostaddr") && p.second.find(',') != std::string::npos;
  });
  if (several && std::ranges::none_of(
                     out.params, [](const auto& p) { return p.first == "target_session_attrs"; })) {
    out.params.emplace_back("target_session_attrs", "read-write");
  }

  // Credentials: the user from options, environment or URL; the password
  // from a file or INSTANCE_GUARD_PASSWORD (else libpq's own conventions).
  if (!options.token_file.empty()) {
    return invalid(url,
                   "PostgreSQL takes a password, not a token: give --password-file or "
                   "INSTANCE_GUARD_PASSWORD");
  }
  // (libpq takes the URL's own user from the URL.)
  auto given = read_credentials(options);
  if (!given) return std::unexpected(given.error());
  if (!given->user.empty()) {
    std::erase_if(out.params, [](const auto& p) { return p.first == "user"; });
    out.params.emplace_back("user", std::move(given->user));
  }
  if (given->password) out.password = std::move(*given->password);
  if (!options.ca_file.empty()) {
    out.params.emplace_back("sslrootcert", options.ca_file.string());
    if (!sslmode_given) out.params.emplace_back("sslmode", "verify-full");
  } else if (options.insecure && !sslmode_given) {
    out.params.emplace_back("sslmode", "require");  // encrypted, certificate not checked
  }
  if (!options.client_cert.empty()) {
    out.params.emplace_back("sslcert", options.client_cert.string());
  }
  if (!options.client_key.empty()) out.params.emplace_back("sslkey", options.client_key.string());

  if (std::ranges::none_of(out.params,
                           [](const auto& p) { return p.first == "application_name"; })) {
    out.params.emplace_back("application_name", "instance-guard");
  }

  out.endpoint = postgres::endpoint_of(out.params, out.table);
  out.logger = options.logger;
  return out;
}

}  // namespace instance
