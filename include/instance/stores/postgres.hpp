// The PostgreSQL store: instance records in one table of a PostgreSQL
// database, over libpq.
//
// Layout: one table (default `instance_guard`, created with two sequences,
// `<table>_version` and `<table>_epoch`, when missing) holds two kinds of
// rows, told apart by `kind`:
//   'd' documents: key (the escaped key, COLLATE "C"), data (bytea),
//       version (from `<table>_version`), writer (a nonce per write);
//   'l' leases:    key, token, owner, expires_at (server time), epoch (from
//       `<table>_epoch`).
// A lease row never shows in list() and get() of its key is not_found.
// Every statement is a single parameterised statement (keys, data, versions
// and tokens only ever travel as parameters; the table name is checked
// against [a-z_][a-z0-9_]* and quoted).
//
// Operations: get = SELECT; create = INSERT ... ON CONFLICT (refused when
// present); replace = upsert; replace_if / remove_if = UPDATE / DELETE ...
// WHERE version = $v (a CTE tells conflict from not_found); list = a range
// scan on the key's bytes. Versions come from a sequence, so they are never
// reused, even after a remove and a re-create.
//
// Native leases, judged on the server's clock: lock = one INSERT ... ON
// CONFLICT DO UPDATE ... WHERE expires_at <= now() setting expires_at =
// now() + ttl and a new epoch from `<table>_epoch`; refresh = UPDATE ...
// WHERE token = $t AND expires_at > now(); unlock = DELETE ... WHERE token =
// $t. The token is "<epoch>.<nonce>"; the grant's epoch is that number,
// so the guard's fencing epoch is the sequence's number. Capabilities:
// versions, conditional writes, native lease and server clock, all without
// probing (PostgreSQL's statements are atomic).
//
// Retries: one connection per store, made on first use and remade when
// lost. A statement that fails because the connection failed (refused,
// reset, server shutting down or starting up), or with a serialization
// failure or deadlock, is retried with exponential backoff and equal jitter
// until `retry_deadline` (on `clock`), or the current StartupBudget's
// time left when less (instance/sdk/startup_budget.hpp); a later attempt's
// connect and statement wait at most the time left. Then Errc::unavailable
// (Errc::timeout when the last attempt timed out), naming the redacted
// endpoint. Writes carry a
// nonce so that a retry of a write whose first attempt may have applied
// recognises its own work (create and replace_if succeed, remove, remove_if
// and unlock count "gone" as done, lock finds its own token).
//
// Errors: SQLSTATE classes map to Errc: 08 and 57P0x -> unavailable, 28 and
// 42501 -> permission, 53100 -> no_space, 57014 -> timeout, 3D000 (no such
// database) -> invalid; a connection refused for a bad password ->
// permission (not retried). Messages say "<op> <key> at <endpoint>: <why>".
//
// Secrets: the password lives only in the options and the store and reaches
// libpq as a connection parameter, never in a URL or a connection string;
// it is never logged, never in describe() and scrubbed from every error
// message. libpq's own PGPASSWORD, PGPASSFILE and ~/.pgpass apply when no
// password is given here.
//
// Clock: on each new connection the server's clock_timestamp() is compared
// with `clock->wall()`; one warning is logged when they differ by more than
// `max_clock_skew`.
//
// Thread safety: a store may be used from any number of threads; statements
// are serialised on its one connection (libpq connections are not
// thread-safe).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/logger.hpp"
#include "instance/open_store.hpp"
#include "instance/sdk/store_module.hpp"
#include "instance/store.hpp"

namespace instance {

inline constexpr std::string_view kDefaultPostgresTable = "instance_guard";

struct PostgresStoreOptions {
  // libpq connection parameters, keyword and value (host, port, dbname,
  // user, sslmode, ...). Never "password": use `password`.
  std::vector<std::pair<std::string, std::string>> params;
  std::string password;  // empty: libpq's PGPASSWORD / PGPASSFILE / ~/.pgpass; never logged

  // The table ([a-z_][a-z0-9_]*, at most 48 characters), in the connection's
  // default schema; created with its sequences when missing.
  std::string table = std::string(kDefaultPostgresTable);

  // Where the store is, for messages (no credentials); made from `params`
  // when empty.
  std::string endpoint;

  // Upper bounds: a guard shortens retry_deadline, request_timeout and (as
  // the retry budget) connect_timeout to its renewal period (Store::tune;
  // StoreTimeouts has the rule).
  std::chrono::milliseconds connect_timeout{5000};  // per connection attempt
  std::chrono::milliseconds request_timeout{5000};  // per statement
  std::chrono::milliseconds retry_deadline{10000};  // all attempts of one operation
  std::chrono::milliseconds initial_backoff{50};    // first retry delay (before jitter)
  std::chrono::milliseconds max_backoff{1000};      // retry delay cap

  // Warn (once) when the server's clock differs from clock->wall() by more;
  // a guard sets it to its max_skew (Store::tune).
  std::chrono::nanoseconds max_clock_skew = std::chrono::seconds(12);
  // Retry deadlines and pauses run on it (tests inject a FakeClock).
  std::shared_ptr<Clock> clock;  // the system clock when null

  std::shared_ptr<Logger> logger;  // null: discard
};

// Parses a store URL into options:
//   postgres://[user@]host[:port][/dbname][?param=value&...]
//   postgresql://...                       (the same)
// Query parameters are libpq's (sslmode, connect_timeout, ...), plus
// `table=<name>` for the table. A password in the URL (user info or a
// `password` / `sslpassword` parameter) is refused (Errc::invalid) and never
// echoed. The password comes from options.password_file or
// INSTANCE_GUARD_PASSWORD (else libpq's own PGPASSWORD, PGPASSFILE,
// ~/.pgpass); the user from options.user, INSTANCE_GUARD_USER or the URL. A
// token (options.token_file) is refused. options.ca_file sets sslrootcert
// (and sslmode=verify-full unless the URL sets sslmode). The timeouts follow
// the guard that uses the store (Store::tune), never the URL.
INSTANCE_EXPORT Result<PostgresStoreOptions> parse_postgres_url(std::string_view url,
                                                                const OpenOptions& options);

// Builds the store; connects on first use (a server that is down at start
// makes the first operation fail with Errc::unavailable after its retries).
// Errc::invalid for a bad table name or a password among `params`.
INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_postgres_store(PostgresStoreOptions options);

// The postgres store family for open_store(): its schemes (postgres://, postgresql://). A
// program that links this store registers it with register_store_module()
// (instance/sdk/store_module.hpp); the loadable module answers the same object.
INSTANCE_EXPORT const StoreModule& postgres_store_module();

}  // namespace instance
