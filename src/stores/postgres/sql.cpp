#include "sql.hpp"

#include <algorithm>

#include "instance/store.hpp"  // kMaxDocumentSize
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
  const std::string epoch_fn = "\"" + t + "_lease_epoch\"";
  lease_epoch_fn = epoch_fn + "(bytea)";
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

  exists =
      "SELECT to_regclass($1)::text, to_regclass($2)::text, to_regclass($3)::text, "
      "to_regprocedure($4)::text";
  const std::string max_size = std::to_string(kMaxDocumentSize);
  // The epoch of a lease document as lease_epoch() reads it: a JSON object
  // whose member "epoch" is a positive integer, written in plain digits (at
  // most 18, so one more still fits a bigint); NULL otherwise. Bytes that
  // are not UTF-8 or not JSON raise an error inside the function, which it
  // catches, so the statement that asks goes on. The member is read both as
  // json (its text as written: 1.0e1 is not an integer here) and as jsonb
  // (the last of duplicate members); both must agree.
  const std::string epoch_fn_body =
      "CREATE OR REPLACE FUNCTION " + lease_epoch_fn +
      " RETURNS bigint LANGUAGE plpgsql IMMUTABLE STRICT AS $fn$"
      " DECLARE doc text; j jsonb; raw text;"
      " BEGIN"
      " IF octet_length($1) > " +
      max_size +
      " THEN RETURN NULL; END IF;"
      " doc := convert_from($1, 'UTF8');"
      " j := doc::jsonb;"
      " IF jsonb_typeof(j) <> 'object' OR jsonb_typeof(j -> 'epoch') IS DISTINCT FROM 'number'"
      " THEN RETURN NULL; END IF;"
      " raw := btrim((doc::json -> 'epoch')::text);"
      " IF raw !~ '^[1-9][0-9]{0,17}$' OR raw <> (j -> 'epoch')::text THEN RETURN NULL; END IF;"
      " RETURN raw::bigint;"
      " EXCEPTION WHEN OTHERS THEN RETURN NULL;"
      " END $fn$;";
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
      " PRIMARY KEY (kind, key));" +
      epoch_fn_body + "COMMIT;";
  server_time = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text";

  replication =
      "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit'), "
      "(SELECT count(*) FROM pg_stat_replication)::text";

  get = "SELECT data, version::text FROM " + T + " WHERE kind = 'd' AND key = $1";
  // The range first: a plan that scans the table (a new table, not yet
  // analysed, looks small to the planner) then compares each row with two
  // bounds, not with every key of the batch.
  get_many = "SELECT key, data, version::text FROM " + T +
             " WHERE kind = 'd' AND key >= $2 AND key <= $3 AND key = ANY($1::text[])";
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
  // The documents, and those with keys in [$1, $2): a listing's keys, or
  // get_all's keys with their data.
  const std::string documents = " FROM " + T + " WHERE kind = 'd'";
  const std::string in_range = " AND key >= $1 AND key < $2";
  get_all = "SELECT key, data, version::text" + documents;
  get_all_in = get_all + in_range;
  list_all = "SELECT key" + documents;
  list = list_all + in_range;
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

  // Every CTE below reads the table as it was before the statement; what
  // the statement wrote is known from its RETURNING. The lock is taken as
  // `lock` takes it; the rest of the work is gated on that row.
  const std::string in_scan = "key >= $11 AND ($12 = '' OR key < $12)";
  claim_lease =
      "WITH taken AS (INSERT INTO " + T +
      " AS cur (kind, key, token, owner, expires_at, epoch) VALUES ('l', "
      "$1, $2, $3, now() + $4::bigint * interval '1 millisecond', " +
      next_epoch +
      ") "
      "ON CONFLICT (kind, key) DO UPDATE SET token = EXCLUDED.token, owner = EXCLUDED.owner, "
      "expires_at = EXCLUDED.expires_at, epoch = CASE WHEN cur.token = EXCLUDED.token THEN "
      "cur.epoch ELSE EXCLUDED.epoch END WHERE cur.expires_at <= now() OR cur.token = "
      "EXCLUDED.token RETURNING cur.epoch), "
      // The lease document before, with its epoch when that reads.
      "before AS (SELECT true AS present, data, version, writer, CASE WHEN octet_length(data) <= " +
      max_size + " THEN " + epoch_fn + "(data) END AS epoch FROM " + T +
      " WHERE kind = 'd' AND key = $5), "
      // Written only when there was none, or its epoch reads; a retry of our
      // own attempt (the document's writer is our nonce) keeps the epoch it
      // filled in.
      "fill AS (SELECT t.epoch AS lock_epoch, CASE WHEN b.present IS NULL THEN t.epoch "
      "WHEN b.writer = $2 THEN b.epoch ELSE GREATEST(b.epoch + 1, t.epoch) END AS epoch "
      "FROM taken t LEFT JOIN before b ON true WHERE b.present IS NULL OR b.epoch IS NOT NULL), "
      "written AS (INSERT INTO " +
      T + " AS cur (kind, key, data, version, writer) SELECT 'd', w.key, w.data, " + next_version +
      ", $2 FROM fill f CROSS JOIN LATERAL (VALUES ($5::text, $6::bytea || "
      "convert_to(f.epoch::text, 'UTF8') || $7::bytea || convert_to(f.lock_epoch::text || '.' "
      "|| $2::text, 'UTF8') || $8::bytea), ($9::text, $10::bytea)) AS w(key, data) "
      "ON CONFLICT (kind, key) DO UPDATE SET data = EXCLUDED.data, version = EXCLUDED.version, "
      "writer = EXCLUDED.writer RETURNING cur.key, cur.data, cur.version) "
      "SELECT 'g'::text, NULL::text, NULL::bytea, epoch::text, NULL::text FROM taken "
      "UNION ALL SELECT 'p', NULL, data, version::text, NULL FROM before "
      "WHERE EXISTS (SELECT 1 FROM taken) "
      "UNION ALL SELECT 'w', key, NULL, version::text, (SELECT epoch::text FROM fill) "
      "FROM written "
      "UNION ALL SELECT 's', key, data, version::text, NULL FROM " +
      T + " WHERE kind = 'd' AND " + in_scan +
      " AND key <> $9 AND key <> $5 AND EXISTS (SELECT 1 FROM fill) "
      "UNION ALL SELECT 's', key, data, version::text, NULL FROM written WHERE key = $5 AND "
      "key <> $9 AND " +
      in_scan;
  // `held` reads the lock row as it was, to tell a lock that is gone from
  // one someone else holds; the documents are written only when refreshed.
  renew_lease =
      "WITH held AS (SELECT token, expires_at > now() AS live FROM " + T +
      " WHERE kind = 'l' AND key = $1), refreshed AS (UPDATE " + T +
      " SET expires_at = now() + $3::bigint * interval '1 millisecond' "
      "WHERE kind = 'l' AND key = $1 AND token = $2 AND expires_at > now() RETURNING 1), "
      "written AS (INSERT INTO " +
      T + " AS cur (kind, key, data, version, writer) SELECT 'd', w.key, w.data, " + next_version +
      ", $2 FROM (VALUES ($4::text, $5::bytea), ($6::text, $7::bytea)) AS w(key, data) "
      "WHERE EXISTS (SELECT 1 FROM refreshed) "
      "ON CONFLICT (kind, key) DO UPDATE SET data = EXCLUDED.data, version = EXCLUDED.version, "
      "writer = EXCLUDED.writer RETURNING cur.key, cur.version) "
      "SELECT (SELECT count(*) FROM refreshed)::text, (SELECT token FROM held), "
      "(SELECT live FROM held)::text, (SELECT version::text FROM written WHERE key = $4), "
      "(SELECT version::text FROM written WHERE key = $6)";
  // The record goes in any case; the lease document is written and the lock
  // row deleted only while the row holds our nonce (as `unlock` judges it).
  // The final SELECT reads every notifying CTE, so each runs.
  end_lease = "WITH gone_record AS (DELETE FROM " + T +
              " WHERE kind = 'd' AND key = $5 RETURNING key), told_record AS (SELECT " + notify +
              " FROM gone_record), gone_lock AS (DELETE FROM " + T +
              " WHERE kind = 'l' AND key = $1 AND token = $2 RETURNING key), told_lock AS "
              "(SELECT " +
              notify + " FROM gone_lock), written AS (INSERT INTO " + T +
              " AS cur (kind, key, data, version, writer) SELECT 'd', $3, $4::bytea, " +
              next_version +
              ", $2 FROM gone_lock ON CONFLICT (kind, key) DO UPDATE SET data = EXCLUDED.data, "
              "version = EXCLUDED.version, writer = EXCLUDED.writer RETURNING 1) "
              "SELECT (SELECT count(*) FROM told_record)::text, (SELECT count(*) FROM "
              "told_lock)::text, (SELECT count(*) FROM written)::text";
}

}  // namespace instance::postgres
