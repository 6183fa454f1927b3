// The PostgreSQL store's statements for one table, and the checks and names
// that go with them. Every value is a parameter; only the table's name
// (checked by check_table_name, then quoted) is part of the text.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "instance/error.hpp"

namespace instance::postgres {

// [a-z_][a-z0-9_]*, at most 48 characters (so "<table>_version" and
// "<table>_lease_epoch" fit PostgreSQL's 63-byte names); Errc::invalid
// otherwise.
Result<void> check_table_name(std::string_view table);

// "postgres://host:port[,host:port...]/dbname" (plus "?table=<t>" when not the default)
// from libpq parameters; never a credential.
std::string endpoint_of(const std::vector<std::pair<std::string, std::string>>& params,
                        std::string_view table);

// How many hosts the parameters name (libpq's comma-separated host list).
std::size_t host_count(const std::vector<std::pair<std::string, std::string>>& params);

struct Statements {
  explicit Statements(const std::string& table);

  // Quoted names, as to_regclass() takes them.
  std::string table_ident, version_seq_ident, epoch_seq_ident;
  // The function that reads a lease document's epoch, with its argument
  // types, as to_regprocedure() takes it.
  std::string lease_epoch_fn;

  // $1..$3 the names above, $4 the function -> four texts (NULL: missing)
  std::string exists;
  // A simple-query string: sequences, table and function, serialised.
  std::string create_schema;
  std::string server_time;  // -> microseconds since the epoch, as text
  std::string replication;  // -> (synchronous_standby_names, synchronous_commit, standbys)

  std::string get;         // $1 key -> (data, version)
  std::string get_many;    // $1 keys (a text[] literal), $2 the least, $3 the greatest ->
                           // (key, data, version) per present key
  std::string create;      // $1 key, $2 data, $3 nonce -> version, or no row when present
  std::string replace;     // $1 key, $2 data, $3 nonce -> version
  std::string remove;      // $1 key -> a row when removed (and notified)
  std::string get_all;     // -> every document: key, data, version
  std::string get_all_in;  // $1 from, $2 to -> the documents with keys in [from, to)
  std::string list_all;    // -> keys
  std::string list;        // $1 from, $2 to -> keys in [from, to)
  std::string replace_if;  // $1 key, $2 data, $3 version, $4 nonce -> (version or NULL, existed)
  std::string remove_if;   // $1 key, $2 version -> (count removed and notified, existed)
  std::string lock;        // $1 key, $2 nonce, $3 owner, $4 ttl ms -> epoch, or no row when held
  std::string refresh;     // $1 key, $2 nonce, $3 ttl ms -> a row when ours and live
  std::string unlock;      // $1 key, $2 nonce -> a row when removed (and notified)

  // Store::claim_lease in one statement. $1 lock key, $2 nonce, $3 owner,
  // $4 ttl ms, $5 lease key, $6..$8 the lease template's head, middle and
  // tail, $9 record key, $10 record data, $11 and $12 the scan's range
  // [from, to) ('' as `to`: no upper bound). No row when someone else holds
  // the lock; else rows (tag, key, data, a, b): 'g' the grant (a = the
  // lock's epoch); 'p' the lease document before (data, a = version), when
  // one; 'w' each document written (key, a = version, b = the epoch filled
  // in), only when written; 's' each other document under the scan (key,
  // data, a = version), read after the writes, only when written.
  std::string claim_lease;
  // Store::renew_lease. $1 lock key, $2 nonce, $3 ttl ms, $4 lease key, $5
  // lease data, $6 record key, $7 record data -> one row (refreshed count,
  // the token holding the lock before (NULL: none), whether that lock was
  // live, the lease's new version, the record's), written only when
  // refreshed.
  std::string renew_lease;
  // Store::end_lease. $1 lock key, $2 nonce, $3 lease key, $4 lease data,
  // $5 record key -> one row (records removed, locks removed, documents
  // written), each removal notified.
  std::string end_lease;

  // Store::await_change: the statements that remove a document or end a
  // lock NOTIFY `channel` (an identifier of at most 63 bytes, from the
  // table's name) with the key as payload, in the same statement; a waiter
  // LISTENs, then asks `present` once.
  std::string channel;
  std::string listen;   // a simple-query string: LISTEN on the channel
  std::string present;  // $1 key -> a row while a document or a live lock has that key
};

}  // namespace instance::postgres
