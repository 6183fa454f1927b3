// The Lua scripts of the Redis store: each runs atomically on the server
// (EVAL). Documents are hashes {data, ver}; lock keys hold "<epoch>:<nonce>".
// Answers are small integers (or arrays), decoded in store.cpp.
//
// The scripts that end a document or a lock also PUBLISH on the key's change
// channel (an ARGV: channels are not keys), atomically with the change, so a
// waiter subscribed to it (Store::await_change) is woken. redis.pcall: a user
// whose ACL denies the channel still removes and unlocks (its waiters poll).
#pragma once

#include <string_view>

namespace instance::redis::scripts {

// KEYS[1] doc; ARGV[1] max size.
// {0} absent; {1, data, ver}; {2, type} not a hash; {3, size} oversized;
// {4} a hash without data or ver.
inline constexpr std::string_view kGet = R"lua(
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then return {0} end
if t ~= 'hash' then return {2, t} end
local n = redis.call('HSTRLEN', KEYS[1], 'data')
if n > tonumber(ARGV[1]) then return {3, n} end
local v = redis.call('HMGET', KEYS[1], 'data', 'ver')
if not v[1] or not v[2] then return {4} end
return {1, v[1], v[2]}
)lua";

// KEYS[1..n] docs; ARGV[1] max size. One answer per key, as kGet's, in the
// order of KEYS: the records of a scan in one round trip.
inline constexpr std::string_view kGetMany = R"lua(
local out = {}
for i, k in ipairs(KEYS) do
  local t = redis.call('TYPE', k)['ok']
  if t == 'none' then out[i] = {0}
  elseif t ~= 'hash' then out[i] = {2, t}
  else
    local n = redis.call('HSTRLEN', k, 'data')
    if n > tonumber(ARGV[1]) then out[i] = {3, n}
    else
      local v = redis.call('HMGET', k, 'data', 'ver')
      if not v[1] or not v[2] then out[i] = {4} else out[i] = {1, v[1], v[2]} end
    end
  end
end
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

}  // namespace instance::redis::scripts
