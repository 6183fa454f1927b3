#include "sql.hpp"

#include <algorithm>

#include "instance/stores/postgres.hpp"

namespace instance::postgres {

Result<void> check_table_name(std::string_view table) {
  bool ok = !table.empty() && table.size() <= 48 && !(table[0] >= '0' && table[0] <= '9');
  for (char c : table) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  }
  if (!ok) {
    return fail(Errc::invalid,
                "PostgreSQL table name must be 1 to 48 of [a-z0-9_], not starting "
                "with a digit");
  }
  return {};
}

namespace {
// A comma-separated list; never empty (one empty item for an empty text).
std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  while (true) {
    const auto comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}
}  // namespace

std::size_t host_count(const std::vector<std::pair<std::string, std::string>>& params) {
  std::size_t hosts = 1;
  for (const auto& [k, v] : params) {
    if (k == "host" || k == "hostaddr") hosts = std::max(hosts, split(v).size());
  }
  return hosts;
}

std::string endpoint_of(const std::vector<std::pair<std::string, std::string>>& params,
                        std::string_view table) {
  std::string host, port, dbname;
  for (const auto& [k, v] : params) {
    if (k == "host" || (k == "hostaddr" && host.empty())) host = v;
    if (k == "port") port = v;
    if (k == "dbname") dbname = v;
  }
  auto printable = [](std::string text) {
    for (auto& c : text) {
      if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
    }
    return text;
  };
  std::string out = "postgres://";
  std::string query;
  if (host.starts_with('/')) {
    query = "host=" + host;  // a Unix socket folder
  } else {
    // libpq pairs the lists: one port for all hosts, or one per host.
    const auto hosts = split(host);
    const auto ports = split(port);
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      if (i > 0) out += ",";
      out += hosts[i];
      const std::string& p = ports.size() == hosts.size() ? ports[i] : ports.front();
      if (!p.empty()) out += ":" + p;
    }
  }
  out += "/" + dbname;
  if (table != kDefaultPostgresTable)
    query += (query.empty() ? "" : "&") + ("table=" + std::string(table));
  if (!query.empty()) out += "?" + query;
  return printable(out);
}

Statements::Statements(const std::string& t) {
  table_ident = "\"" + t + "\"";
  version_seq_ident = "\"" + t + "_version\"";
  epoch_seq_ident = "\"" + t + "_epoch\"";
  const std::string& T = table_ident;
  const std::string next_version = "nextval('" + version_seq_ident + "')";
  const std::string next_epoch = "nextval('" + epoch_seq_ident + "')";
  // 11 + at most 48 bytes of [a-z0-9_] (check_table_name): a name without
  // quoting trouble that fits 63 bytes. The key is the payload (waiters
  // filter on it) unless it is too long for one (8000 bytes): then empty,
  // which wakes every waiter on the table.
  channel = "ig_changed_" + t;
  listen = "LISTEN \"" + channel + "\"";
  const std::string notify =
      "pg_notify('" + channel + "', CASE WHEN octet_length(key) <= 7000 THEN key ELSE '' END)";
  present = "SELECT 1 FROM " + T + " WHERE key = $1 AND (kind = 'd' OR expires_at > now())";

  exists = "SELECT to_regclass($1)::text, to_regclass($2)::text, to_regclass($3)::text";
  create_schema =
      "BEGIN;"
      "SELECT pg_advisory_xact_lock(hashtext('instance-guard:" +
      t +
      "'));"
      "CREATE SEQUENCE IF NOT EXISTS " +
      version_seq_ident +
      ";"
      "CREATE SEQUENCE IF NOT EXISTS " +
      epoch_seq_ident +
      ";"
      "CREATE TABLE IF NOT EXISTS " +
      T +
      " ("
      " kind text NOT NULL CHECK (kind IN ('d', 'l')),"  // d: document, l: lease
      " key text COLLATE \"C\" NOT NULL,"
      " data bytea,"
      " version bigint,"
      " writer text,"
      " token text,"
      " owner text,"
      " expires_at timestamptz,"
      " epoch bigint,"
      " PRIMARY KEY (kind, key));"
      "COMMIT;";
  server_time = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text";

  replication =
      "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit'), "
      "(SELECT count(*) FROM pg_stat_replication)::text";

  get = "SELECT data, version::text FROM " + T + " WHERE kind = 'd' AND key = $1";
  get_many =
      "SELECT key, data, version::text FROM " + T + " WHERE kind = 'd' AND key = ANY($1::text[])";
  // A retry of our own create (same nonce) finds its row and succeeds.
  create = "INSERT INTO " + T + " AS cur (kind, key, data, version, writer) VALUES ('d', $1, $2, " +
           next_version +
           ", $3) ON CONFLICT (kind, key) DO UPDATE SET writer = cur.writer "
           "WHERE cur.writer = EXCLUDED.writer RETURNING cur.version::text";
  replace = "INSERT INTO " + T +
            " AS cur (kind, key, data, version, writer) VALUES ('d', $1, $2, " + next_version +
            ", $3) ON CONFLICT (kind, key) DO UPDATE SET data = EXCLUDED.data, "
            "version = EXCLUDED.version, writer = EXCLUDED.writer RETURNING cur.version::text";
  remove = "WITH gone AS (DELETE FROM " + T +
           " WHERE kind = 'd' AND key = $1 RETURNING key) SELECT " + notify + "::text FROM gone";
  list_all = "SELECT key FROM " + T + " WHERE kind = 'd'";
  list = "SELECT key FROM " + T + " WHERE kind = 'd' AND key >= $1 AND key < $2";
  // The subqueries see the table as it was before the change: "existed".
  replace_if = "WITH changed AS (UPDATE " + T + " SET data = $2, version = " + next_version +
               ", writer = $4 WHERE kind = 'd' AND key = $1 AND (version = $3::bigint OR "
               "writer = $4) RETURNING version) SELECT (SELECT version::text FROM changed), "
               "EXISTS (SELECT 1 FROM " +
               T + " WHERE kind = 'd' AND key = $1)::text";
  // pg_notify is volatile: the CTE that calls it is never inlined away.
  remove_if = "WITH gone AS (DELETE FROM " + T +
              " WHERE kind = 'd' AND key = $1 AND version = "
              "$2::bigint RETURNING key), told AS (SELECT " +
              notify +
              " FROM gone) SELECT (SELECT count(*) FROM told)::text, "
              "EXISTS (SELECT 1 FROM " +
              T + " WHERE kind = 'd' AND key = $1)::text";
  // Taken in one statement, judged on the server's clock; a retry of our own
  // lock (same nonce) keeps its epoch.
  lock = "INSERT INTO " + T +
         " AS cur (kind, key, token, owner, expires_at, epoch) VALUES ('l', "
         "$1, $2, $3, now() + $4::bigint * interval '1 millisecond', " +
         next_epoch +
         ") "
         "ON CONFLICT (kind, key) DO UPDATE SET token = EXCLUDED.token, owner = EXCLUDED.owner, "
         "expires_at = EXCLUDED.expires_at, epoch = CASE WHEN cur.token = EXCLUDED.token THEN "
         "cur.epoch ELSE EXCLUDED.epoch END WHERE cur.expires_at <= now() OR cur.token = "
         "EXCLUDED.token RETURNING cur.epoch::text";
  refresh = "UPDATE " + T +
            " SET expires_at = now() + $3::bigint * interval '1 millisecond' "
            "WHERE kind = 'l' AND key = $1 AND token = $2 AND expires_at > now() RETURNING 1";
  unlock = "WITH gone AS (DELETE FROM " + T +
           " WHERE kind = 'l' AND key = $1 AND token = $2 RETURNING key) SELECT " + notify +
           "::text FROM gone";
}

}  // namespace instance::postgres
