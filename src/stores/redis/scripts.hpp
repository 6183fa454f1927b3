// The Lua scripts of the Redis store: each runs atomically on the server
// (EVAL). Documents are hashes {data, ver}; lock keys hold "<epoch>:<nonce>".
// Answers are small integers (or arrays), decoded in store.cpp.
//
// The scripts that end a document or a lock also PUBLISH on the key's change
// channel (an ARGV: channels are not keys), atomically with the change, so a
// waiter subscribed to it (Store::await_change) is woken. redis.pcall: a user
// whose ACL denies the channel still removes and unlocks (its waiters poll).
#pragma once

#include <string>
#include <string_view>

namespace instance::redis::scripts {

// A Lua function, read(key, max): one document as the scripts answer it:
// {0} absent; {1, data, ver}; {2, type} not a hash; {3, size} oversized;
// {4} a hash without data or ver. The scripts that read documents start
// with it.
inline constexpr std::string_view kReadDoc = R"lua(
local function read(k, max)
  local t = redis.call('TYPE', k)['ok']
  if t == 'none' then return {0} end
  if t ~= 'hash' then return {2, t} end
  local n = redis.call('HSTRLEN', k, 'data')
  if n > max then return {3, n} end
  local v = redis.call('HMGET', k, 'data', 'ver')
  if not v[1] or not v[2] then return {4} end
  return {1, v[1], v[2]}
end
)lua";

// KEYS[1] doc; ARGV[1] max size. As read() answers.
inline const std::string kGet = std::string(kReadDoc) + R"lua(
return read(KEYS[1], tonumber(ARGV[1]))
)lua";

// KEYS[1..n] docs; ARGV[1] max size. One answer per key, as kGet's, in the
// order of KEYS: the records of a scan in one round trip.
inline const std::string kGetMany = std::string(kReadDoc) + R"lua(
local out = {}
for i, k in ipairs(KEYS) do out[i] = read(k, tonumber(ARGV[1])) end
return out
)lua";

// KEYS[1] doc; ARGV[1] data, ARGV[2] new version.
// 1 created (or created by our own earlier attempt: same version); 0 exists.
inline constexpr std::string_view kCreate = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and
     redis.call('HGET', KEYS[1], 'ver') == ARGV[2] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'ver', ARGV[2])
return 1
)lua";

// KEYS[1] doc; ARGV[1] data, ARGV[2] expected version, ARGV[3] new version.
// 1 written (or by our own earlier attempt); 0 absent; -1 another version.
inline constexpr std::string_view kReplaceIf = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = redis.call('HGET', KEYS[1], 'ver')
if cur == ARGV[3] then return 1 end
if cur ~= ARGV[2] then return -1 end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'ver', ARGV[3])
return 1
)lua";

// KEYS[1] doc; ARGV[1] change channel. 1 removed; 0 absent.
inline constexpr std::string_view kRemove = R"lua(
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.pcall('PUBLISH', ARGV[1], '')
return 1
)lua";

// KEYS[1] doc; ARGV[1] expected version, ARGV[2] change channel.
// 1 removed; 0 absent; -1 another version.
inline constexpr std::string_view kRemoveIf = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'ver') ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
redis.pcall('PUBLISH', ARGV[2], '')
return 1
)lua";

// KEYS[1] lock, KEYS[2] epoch counter; ARGV[1] nonce, ARGV[2] ttl in ms.
// The token "<epoch>:<nonce>" when granted (or already ours: our own earlier
// attempt, refreshed); nil when someone else holds the lock.
inline constexpr std::string_view kLock = R"lua(
local cur = redis.call('GET', KEYS[1])
if cur then
  local mine = ':' .. ARGV[1]
  if string.sub(cur, -string.len(mine)) == mine then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return cur
  end
  return false
end
local epoch = redis.call('INCR', KEYS[2])
local token = string.format('%d', epoch) .. ':' .. ARGV[1]
redis.call('SET', KEYS[1], token, 'NX', 'PX', ARGV[2])
return token
)lua";

// KEYS[1] lock; ARGV[1] token, ARGV[2] ttl in ms.
// 1 refreshed; 0 absent; -1 someone else's.
inline constexpr std::string_view kRefresh = R"lua(
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if cur ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
)lua";

// KEYS[1] lock; ARGV[1] token, ARGV[2] change channel.
// 1 released; 0 absent; -1 someone else's.
inline constexpr std::string_view kUnlock = R"lua(
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if cur ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
redis.pcall('PUBLISH', ARGV[2], '')
return 1
)lua";

// The lease operations of exclusive mode (Store::claim_lease, renew_lease,
// end_lease), each one script: one round trip. They check every key's type
// before their first write (a script that fails halfway keeps what it
// wrote).

// KEYS[1] lock, KEYS[2] epoch counter, KEYS[3] lease doc, KEYS[4] our
// record doc; ARGV[1] nonce, ARGV[2] ttl in ms, ARGV[3..5] the lease
// document's head, middle and tail (around the epoch and the token),
// ARGV[6] our record, ARGV[7] the lease's new version, ARGV[8] the record's,
// ARGV[9] the SCAN pattern of the records, ARGV[10] max size.
// nil when someone else holds the lock. Else {token, written (0|1), epoch,
// the lease document before (as kGet answers), {record keys}, {their
// documents, as kGet answers}}: written only when the lease document before
// is absent or a hash whose data is a JSON object with a positive integer
// "epoch" (and our record's key is absent or a hash); the epoch is then the
// larger of that + 1 and the lock's count.
inline const std::string kClaimLease = std::string(kReadDoc) + R"lua(
local max = tonumber(ARGV[10])
local cur = redis.call('GET', KEYS[1])
local token
if cur then
  local mine = ':' .. ARGV[1]
  if string.sub(cur, -string.len(mine)) ~= mine then return false end
  token = cur
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  token = string.format('%d', redis.call('INCR', KEYS[2])) .. ':' .. ARGV[1]
  redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
end
local counted = tonumber(string.match(token, '^(%d+):'))
local before = read(KEYS[3], max)
local last = 0
if before[1] == 1 then
  local ok, doc = pcall(cjson.decode, before[2])
  if not ok or type(doc) ~= 'table' or type(doc.epoch) ~= 'number' or doc.epoch < 1 or
     doc.epoch ~= math.floor(doc.epoch) then
    return {token, 0, 0, before, {}, {}}
  end
  last = doc.epoch
elseif before[1] ~= 0 then
  return {token, 0, 0, before, {}, {}}
end
local rt = redis.call('TYPE', KEYS[4])['ok']
if rt ~= 'none' and rt ~= 'hash' then return {token, 0, 0, before, {}, {}} end
local epoch = math.max(last + 1, counted)
local e = string.format('%d', epoch)
redis.call('HSET', KEYS[3], 'data', ARGV[3] .. e .. ARGV[4] .. token .. ARGV[5], 'ver', ARGV[7])
redis.call('HSET', KEYS[4], 'data', ARGV[6], 'ver', ARGV[8])
local keys, docs, seen = {}, {}, {}
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[9], 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    if k ~= KEYS[4] and not seen[k] then
      seen[k] = true
      keys[#keys + 1] = k
      docs[#docs + 1] = read(k, max)
    end
  end
until cursor == '0'
return {token, 1, e, before, keys, docs}
)lua";

// KEYS[1] lock, KEYS[2] lease doc, KEYS[3] our record doc; ARGV[1] token,
// ARGV[2] ttl in ms, ARGV[3] lease data, ARGV[4] its new version, ARGV[5]
// record data, ARGV[6] its new version.
// 1 refreshed and both rewritten; 2 refreshed only (a key of another type);
// 0 the lock is absent; -1 someone else's.
inline constexpr std::string_view kRenewLease = R"lua(
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if cur ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
for _, k in ipairs({KEYS[2], KEYS[3]}) do
  local t = redis.call('TYPE', k)['ok']
  if t ~= 'none' and t ~= 'hash' then return 2 end
end
redis.call('HSET', KEYS[2], 'data', ARGV[3], 'ver', ARGV[4])
redis.call('HSET', KEYS[3], 'data', ARGV[5], 'ver', ARGV[6])
return 1
)lua";

// KEYS[1] lock, KEYS[2] lease doc, KEYS[3] our record doc; ARGV[1] token,
// ARGV[2] lease data, ARGV[3] its new version, ARGV[4] the lock's change
// channel, ARGV[5] the record's. Removes the record; while the lock is ours,
// writes the lease document and unlocks. 1 done; 0 the lease document's
// key holds another type (the record removed, the lock kept: the caller
// goes step by step).
inline constexpr std::string_view kEndLease = R"lua(
if redis.call('DEL', KEYS[3]) == 1 then redis.pcall('PUBLISH', ARGV[5], '') end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 1 end
local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'hash' then return 0 end
redis.call('HSET', KEYS[2], 'data', ARGV[2], 'ver', ARGV[3])
redis.call('DEL', KEYS[1])
redis.pcall('PUBLISH', ARGV[4], '')
return 1
)lua";

}  // namespace instance::redis::scripts
