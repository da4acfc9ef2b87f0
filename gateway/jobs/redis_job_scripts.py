"""The Lua scripts of the Redis job store (redis_jobs.py): each change to a job is one script,
so its hash, the stream's pending entries, the indexes and the `max_queued` counter change
together. Every script starts with COMMON (ARGV[1] is the key prefix, which names the project,
so a script never touches another project's keys) and its helpers.
"""

from __future__ import annotations

import json

from toolmesh.gateway.jobs.job import OUTCOME_UNKNOWN

#: The consumer group every gateway reads the queue in.
GROUP = "workers"
#: Jobs purged, or lapsed leases recovered, per script run (the next run does the rest).
BATCH = 500

COMMON = f"""
local P = ARGV[1]
local stream = P .. 'queue'
local GROUP = '{GROUP}'
local UNKNOWN = [[{json.dumps(OUTCOME_UNKNOWN)}]]
local function release(job, id)
  local entry = redis.call('HGET', job, 'entry')
  if entry then
    redis.call('XACK', stream, GROUP, entry)
    redis.call('XDEL', stream, entry)
  end
  redis.call('ZREM', P .. 'running', id)
  redis.call('HDEL', job, 'entry', 'worker', 'lease_until')
end
local function finish(job, id, now, ttl)
  redis.call('DECR', P .. 'active')
  redis.call('ZADD', P .. 'finished', now, id)
  redis.call('EXPIRE', job, ttl)
  local f = redis.call('HMGET', job, 'owner', 'status', 'callback_state', 'created')
  if f[2] == 'dead' then redis.call('ZADD', P .. 'dead:' .. f[1], f[4], id) end
  if f[3] == 'pending' then redis.call('ZADD', P .. 'callbacks', now, id) end
end
-- Ends a job its gateway stopped running: `dead` (out of attempts) or `failed` (not idempotent).
local function bury(job, id, now, ttl, lost, status)
  local cb = redis.call('HGET', job, 'callback_state')
  if cb ~= 'none' then cb = 'pending' end
  redis.call('HSET', job, 'status', status or 'dead', 'error', lost, 'finished', now, 'updated', now,
    'callback_state', cb)
  release(job, id)
  finish(job, id, now, ttl)
end
"""

#: ARGV prefix, id, max_queued, owner, created, then the hash's fields and values.
#: Returns -1 when queued, else the number of active jobs (the queue is full).
ADD = """
-- Already recorded: a trigger's message delivered twice.
if redis.call('EXISTS', P .. 'job:' .. ARGV[2]) == 1 then return -1 end
local active = tonumber(redis.call('GET', P .. 'active') or '0')
if active >= tonumber(ARGV[3]) then return active end
redis.call('INCR', P .. 'active')
local job = P .. 'job:' .. ARGV[2]
redis.call('HSET', job, unpack(ARGV, 6))
redis.call('ZADD', P .. 'owner:' .. ARGV[4], ARGV[5], ARGV[2])
redis.call('XADD', stream, '*', 'id', ARGV[2])
return -1
"""

#: ARGV prefix, id, finished, owner, created, expiry (s), then the hash's fields and values: a
#: job finished from the start (dead at once) is indexed like a buried one, never queued.
RECORD = """
local job = P .. 'job:' .. ARGV[2]
if redis.call('EXISTS', job) == 1 then return 0 end
redis.call('HSET', job, unpack(ARGV, 7))
redis.call('ZADD', P .. 'owner:' .. ARGV[4], ARGV[5], ARGV[2])
redis.call('ZADD', P .. 'finished', ARGV[3], ARGV[2])
if redis.call('HGET', job, 'status') == 'dead' then
  redis.call('ZADD', P .. 'dead:' .. ARGV[4], ARGV[5], ARGV[2])
end
redis.call('EXPIRE', job, ARGV[6])
return 0
"""

#: ARGV prefix, worker, now, lease_until, max_attempts, lost error, finished ttl, lease (ms),
#: limit, then the functions this gateway serves. Returns up to `limit` claimed jobs (each its
#: hash `packed`), oldest first. A job of another function is parked (off the
#: stream, on `parked:<function>`) until a gateway that serves it finds the stream empty and
#: takes it.
CLAIM = """
local worker, now, lease_until = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local max_attempts, lost, ttl = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local limit = tonumber(ARGV[9])
local serves = {}
for i = 10, #ARGV do serves[ARGV[i]] = true end
local due = redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', ARGV[3], 'LIMIT', 0, 100)
for _, id in ipairs(due) do
  redis.call('XADD', stream, '*', 'id', id)
  redis.call('ZREM', P .. 'delayed', id)
end
-- A job's hash as one string, per field `<len(name)>:<len(value)>:<name><value>`: a claim's
-- reply is then one string per job to parse, not two per field (redis_jobs.py unpacks it).
local function packed(job)
  local flat = redis.call('HGETALL', job)
  local parts = {}
  for i = 1, #flat, 2 do
    parts[#parts + 1] = #flat[i] .. ':' .. #flat[i + 1] .. ':' .. flat[i] .. flat[i + 1]
  end
  return table.concat(parts)
end
local function drop(entry)
  redis.call('XACK', stream, GROUP, entry)
  redis.call('XDEL', stream, entry)
end
local function park(entry, id, job, fn)
  drop(entry)
  redis.call('HSET', job, 'status', 'queued')  -- a lapsed running one is queued again
  redis.call('HDEL', job, 'worker', 'lease_until', 'entry')
  redis.call('ZREM', P .. 'running', id)
  redis.call('RPUSH', P .. 'parked:' .. fn, id)
  redis.call('SADD', P .. 'parked', fn)
end
local function take(entry, id, reclaimed)
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'status', 'worker', 'lease_until', 'attempts', 'function',
    'idempotent')
  local status = f[1]
  if not status or (status ~= 'queued' and status ~= 'running') then
    drop(entry)  -- purged, or cancelled while queued
    return nil
  end
  if not reclaimed and status == 'running' then
    drop(entry)  -- a second entry of a job another entry runs (queued again meanwhile)
    return nil
  end
  if reclaimed and status == 'running' and tonumber(f[3]) >= now then
    -- Idle past our lease but not past its holder's (a longer one): give it back.
    redis.call('XCLAIM', stream, GROUP, f[2], 0, entry, 'JUSTID')
    return nil
  end
  if reclaimed and status == 'running' and f[6] ~= '1' then
    -- Its gateway died mid-run and it may have had its effect: not run again.
    redis.call('HSET', job, 'entry', entry)
    bury(job, id, ARGV[3], ttl, UNKNOWN, 'failed')
    return nil
  end
  if reclaimed and tonumber(f[4]) >= max_attempts then
    redis.call('HSET', job, 'entry', entry)
    bury(job, id, ARGV[3], ttl, lost)
    return nil
  end
  if not serves[f[5]] then
    park(entry, id, job, f[5])
    return nil
  end
  redis.call('HSET', job, 'status', 'running', 'worker', worker, 'lease_until', lease_until,
    'updated', ARGV[3], 'entry', entry)
  redis.call('HINCRBY', job, 'attempts', 1)
  redis.call('ZADD', P .. 'running', lease_until, id)
  return packed(job)
end
local got = {}
local cursor = '0-0'
repeat
  local r = redis.call('XAUTOCLAIM', stream, GROUP, worker, ARGV[8], cursor, 'COUNT', 1)
  cursor = r[1]
  local e = r[2][1]
  if e then
    local job = take(e[1], e[2][2], true)
    if job then
      got[#got + 1] = job
      if #got >= limit then return got end
    end
  end
until cursor == '0-0'
local drained = false
-- At most 100 entries dropped (a script holds Redis: the next claim reads on).
for _ = 1, 100 + limit do
  local r = redis.call('XREADGROUP', 'GROUP', GROUP, worker, 'COUNT', 1, 'STREAMS', stream, '>')
  if not r or not r[1] then
    drained = true
    break
  end
  local e = r[1][2][1]
  local job = take(e[1], e[2][2], false)
  if job then
    got[#got + 1] = job
    if #got >= limit then return got end
  end
end
if not drained then return got end
-- Nothing new on the stream: parked jobs of functions this gateway serves, back through it.
for _, fn in ipairs(redis.call('SMEMBERS', P .. 'parked')) do
  if serves[fn] then
    local parked = P .. 'parked:' .. fn
    while true do
      local id = redis.call('LPOP', parked)
      if not id then break end
      redis.call('XADD', stream, '*', 'id', id)
      local e = redis.call('XREADGROUP', 'GROUP', GROUP, worker, 'COUNT', 1, 'STREAMS', stream, '>')[1][2][1]
      local job = take(e[1], e[2][2], false)
      if job then
        got[#got + 1] = job
        if #got >= limit then
          if redis.call('LLEN', parked) == 0 then redis.call('SREM', P .. 'parked', fn) end
          return got
        end
      end
    end
    redis.call('SREM', P .. 'parked', fn)
  end
end
return got
"""

#: ARGV prefix, worker, ids...: jobs claimed and never started, queued again (at the stream's
#: end), the attempt their claim counted given back.
RELEASE = """
for i = 3, #ARGV do
  local id = ARGV[i]
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'status', 'worker')
  if f[1] == 'running' and f[2] == ARGV[2] then
    release(job, id)
    redis.call('HSET', job, 'status', 'queued')
    redis.call('HINCRBY', job, 'attempts', -1)
    redis.call('XADD', stream, '*', 'id', id)
  end
end
return 0
"""

#: ARGV prefix, worker, lease_until, ids...
RENEW = """
for i = 4, #ARGV do
  local job = P .. 'job:' .. ARGV[i]
  local f = redis.call('HMGET', job, 'status', 'worker', 'entry')
  if f[1] == 'running' and f[2] == ARGV[2] then
    redis.call('HSET', job, 'lease_until', ARGV[3])
    redis.call('ZADD', P .. 'running', ARGV[3], ARGV[i])
    redis.call('XCLAIM', stream, GROUP, ARGV[2], 0, f[3], 'JUSTID')  -- idle from now
  end
end
return 0
"""

#: ARGV prefix, worker, now, finished ttl, then per job: id, status, result, error ('' for
#: none), run_after, callback_state. Returns per job 1 if settled, 0 if the worker no longer
#: held it.
SETTLE = """
local worker, now, ttl = ARGV[2], ARGV[3], ARGV[4]
local settled = {}
for i = 5, #ARGV, 6 do
  local id, status = ARGV[i], ARGV[i + 1]
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'status', 'worker')
  if f[1] ~= 'running' or f[2] ~= worker then
    settled[#settled + 1] = 0
  else
    redis.call('HSET', job, 'status', status, 'result', ARGV[i + 2], 'updated', now,
      'callback_state', ARGV[i + 5])
    if ARGV[i + 3] == '' then
      redis.call('HDEL', job, 'error')
    else
      redis.call('HSET', job, 'error', ARGV[i + 3])
    end
    release(job, id)
    if status == 'queued' then
      redis.call('ZADD', P .. 'delayed', ARGV[i + 4], id)
    else
      redis.call('HSET', job, 'finished', now)
      finish(job, id, now, ttl)
    end
    settled[#settled + 1] = 1
  end
end
return settled
"""

#: ARGV prefix, now, max_attempts, lost error, finished ttl. Returns the lapsed jobs.
RECOVER = f"""
local now, max_attempts = ARGV[2], tonumber(ARGV[3])
local lapsed = redis.call('ZRANGEBYSCORE', P .. 'running', '-inf', '(' .. now, 'LIMIT', 0, {BATCH})
local n = 0
for _, id in ipairs(lapsed) do
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'status', 'attempts', 'entry', 'worker', 'idempotent')
  if f[1] ~= 'running' then
    redis.call('ZREM', P .. 'running', id)
  else
    n = n + 1
    if f[5] ~= '1' then
      bury(job, id, now, ARGV[5], UNKNOWN, 'failed')
    elseif tonumber(f[2]) >= max_attempts then
      bury(job, id, now, ARGV[5], ARGV[4])
    else
      redis.call('HSET', job, 'status', 'queued', 'updated', now)
      redis.call('HDEL', job, 'worker', 'lease_until')
      redis.call('ZREM', P .. 'running', id)
      -- Still pending, but idle far past any lease: the next XAUTOCLAIM anywhere takes it.
      redis.call('XCLAIM', stream, GROUP, f[4], 0, f[3], 'IDLE', 86400000000, 'JUSTID')
    end
  end
end
return n
"""

#: ARGV prefix, id, owner, now, statuses...
REQUEUE = """
local id, owner, now = ARGV[2], ARGV[3], ARGV[4]
local job = P .. 'job:' .. id
local f = redis.call('HMGET', job, 'status', 'owner', 'callback_state')
if f[2] ~= owner then return nil end
local allowed = false
for i = 5, #ARGV do if ARGV[i] == f[1] then allowed = true end end
if not allowed then return nil end
local cb = 'pending'
if f[3] == 'none' then cb = 'none' end
redis.call('HSET', job, 'status', 'queued', 'attempts', 0, 'updated', now, 'callback_state', cb,
  'callback_attempts', 0)
redis.call('HDEL', job, 'result', 'error', 'finished')
redis.call('PERSIST', job)
redis.call('ZREM', P .. 'finished', id)
redis.call('ZREM', P .. 'dead:' .. owner, id)
redis.call('ZREM', P .. 'callbacks', id)
redis.call('INCR', P .. 'active')
redis.call('XADD', stream, '*', 'id', id)
return redis.call('HGETALL', job)
"""

#: ARGV prefix, id, owner, now, then "answer:<key>" and the answer's JSON, pairwise.
ANSWER = """
local job = P .. 'job:' .. ARGV[2]
local f = redis.call('HMGET', job, 'status', 'owner')
if f[1] ~= 'failed' or f[2] ~= ARGV[3] then return nil end
redis.call('HSET', job, 'updated', ARGV[4], unpack(ARGV, 5))
return redis.call('HGETALL', job)
"""

#: ARGV prefix, id, owner, now, finished ttl, then the statuses it may be cancelled from.
CANCEL = """
local id, now = ARGV[2], ARGV[4]
local job = P .. 'job:' .. id
local f = redis.call('HMGET', job, 'status', 'owner', 'callback_state', 'function')
local allowed = false
for i = 6, #ARGV do if ARGV[i] == f[1] then allowed = true end end
if not allowed or f[2] ~= ARGV[3] then return nil end
if f[1] == 'queued' and f[4] then redis.call('LREM', P .. 'parked:' .. f[4], 0, id) end
if f[1] ~= 'queued' and f[1] ~= 'running' then
  -- Finished already (a failed job waiting for answers): off the queue, only its status changes.
  redis.call('HSET', job, 'status', 'cancelled', 'updated', now)
  return redis.call('HGETALL', job)
end
local cb = 'failed'
if f[3] == 'none' then cb = 'none' end
redis.call('HSET', job, 'status', 'cancelled', 'finished', now, 'updated', now, 'callback_state', cb)
redis.call('ZREM', P .. 'delayed', id)
release(job, id)  -- a running or recovered job's entry is pending; a fresh one is skipped at claim
finish(job, id, now, ARGV[5])
return redis.call('HGETALL', job)
"""

#: ARGV prefix, now, hold until, limit.
TAKE_CALLBACKS = """
local ids = redis.call('ZRANGEBYSCORE', P .. 'callbacks', '-inf', ARGV[2], 'LIMIT', 0, ARGV[4])
local out = {}
for _, id in ipairs(ids) do
  local job = P .. 'job:' .. id
  if redis.call('HGET', job, 'callback_state') == 'pending' then
    redis.call('ZADD', P .. 'callbacks', ARGV[3], id)
    out[#out + 1] = redis.call('HGETALL', job)
  else
    redis.call('ZREM', P .. 'callbacks', id)
  end
end
return out
"""

#: ARGV prefix, id, state, attempts, due.
CALLBACK_DONE = """
local job = P .. 'job:' .. ARGV[2]
if redis.call('EXISTS', job) == 0 then return 0 end
redis.call('HSET', job, 'callback_state', ARGV[3], 'callback_attempts', ARGV[4])
if ARGV[3] == 'pending' then
  redis.call('ZADD', P .. 'callbacks', ARGV[5], ARGV[2])
else
  redis.call('ZREM', P .. 'callbacks', ARGV[2])
end
return 1
"""

#: ARGV prefix, finished before.
PURGE = f"""
local ids = redis.call('ZRANGEBYSCORE', P .. 'finished', '-inf', '(' .. ARGV[2], 'LIMIT', 0, {BATCH})
local n = 0
for _, id in ipairs(ids) do
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'owner', 'callback_state')
  if not f[1] then
    redis.call('ZREM', P .. 'finished', id)  -- expired already
  elseif f[2] ~= 'pending' then
    redis.call('DEL', job)
    redis.call('ZREM', P .. 'finished', id)
    redis.call('ZREM', P .. 'owner:' .. f[1], id)
    redis.call('ZREM', P .. 'dead:' .. f[1], id)
    redis.call('ZREM', P .. 'callbacks', id)
    n = n + 1
  end
end
return n
"""
