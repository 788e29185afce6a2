"""The Redis layout of the job store: the queue's keys, one job's keys (:class:`JobKeys`)
and the Lua scripts that move a chunk atomically (see :mod:`.redis_jobs` for the queue they
make: fair owners, leases, the bell)."""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "kalah:v1:job"
ACTIVE = "kalah:v1:jobs:active"
"""Ids of jobs with unfinished chunks."""
OWNED_PREFIX = "kalah:v1:jobs:of:"
"""``<prefix><owner>``: a set of the owner's jobs that may be unfinished (cleaned as read)."""
FAIR_PREFIX = "kalah:v1:fair:"
RING = FAIR_PREFIX + "ring"
"""Owners with waiting chunks, served round-robin (see the module docstring)."""
LEASES = "kalah:v1:jobs:leases"
"""Sorted set: ``<job>:<chunk>`` being run, scored by its lease's end (Redis's clock, ms)."""
TOKENS = "kalah:v1:jobs:lease-tokens"
"""Hash: ``<job>:<chunk>`` -> the token of the runner holding its lease."""
BELL = "kalah:v1:jobs:bell"
"""A list idle runners block on; a new job pushes one entry per chunk."""
BELL_MAX = 64
HOME_PREFIX = FAIR_PREFIX + "home:"
"""``<prefix><runner>``: chunks of engine work left for one runner (its lease token), whose
table holds their tree; that runner takes them before any owner's (see :mod:`.work`)."""
HOME_BELL_PREFIX = BELL + ":"
"""``<prefix><runner>``: the bell of one runner's own chunks (it blocks on both bells)."""
WORKERS = "kalah:v1:workers"
"""The batch workers alive: each worker's name, scored by its last beat (Redis's clock, ms)."""

NOW = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
"""

# The next chunk to run, leased: a lapsed lease first, else one left for this runner (its home
# list), else the next owner's next chunk (rotating the ring). Chunks of jobs gone, finished,
# failed or cancelled are dropped on the way. A chunk of analyses taken more than the attempts
# gives its first unanswered task the problem (ARGV[6]) and goes on; engine work fails its job.
# Engine work's meta records its runner and when (``worker``, ``taken``: Redis's clock, ms).
# Returns {entry, attempt, chunk JSON, payer, the task given the problem or ''}, or false.
# KEYS: ring, leases, tokens, active; ARGV: fair prefix, job prefix, token, lease ms, attempts,
# problem JSON, home prefix.
TAKE = (
    NOW
    + """
local function next_entry()
  local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ms, 'LIMIT', 0, 1)
  if lapsed[1] then return lapsed[1] end
  local mine = redis.call('LPOP', ARGV[7] .. ARGV[3])
  if mine then return mine end
  for _ = 1, redis.call('LLEN', KEYS[1]) do
    local owner = redis.call('RPOPLPUSH', KEYS[1], KEYS[1])
    if not owner then return false end
    local waiting = ARGV[1] .. owner
    local chunk = redis.call('LPOP', waiting)
    if redis.call('LLEN', waiting) == 0 then redis.call('LREM', KEYS[1], 0, owner) end
    if chunk then return chunk end
  end
  return false
end
for _ = 1, 1000 do
  local entry = next_entry()
  if not entry then return false end
  local sep = string.find(entry, ':', 1, true)
  local job = string.sub(entry, 1, sep - 1)
  local n = string.sub(entry, sep + 1)
  local base = ARGV[2] .. ':' .. job .. ':'
  local meta = base .. 'meta'
  local status = redis.call('HGET', meta, 'status')
  local body = redis.call('GET', base .. 'chunk:' .. n)
  if (status == 'queued' or status == 'running') and redis.call('HGET', meta, 'feed') == '1'
      and redis.call('EXISTS', base .. 'poster') == 0 then
    redis.call('HSET', meta, 'status', 'cancelled', 'error', 'its poster is gone')
    redis.call('SREM', KEYS[4], job)
    status = 'cancelled'
  end
  if (status ~= 'queued' and status ~= 'running') or (not body)
      or redis.call('SISMEMBER', base .. 'done', n) == 1 then
    redis.call('ZREM', KEYS[2], entry)
    redis.call('HDEL', KEYS[3], entry)
  else
    local attempt = redis.call('HINCRBY', base .. 'attempts', n, 1)
    local poisoned = ''
    if attempt > tonumber(ARGV[5]) and redis.call('HGET', meta, 'feed') ~= '1' then
      -- Analyses are stored as they come: the first unanswered task was in hand each time
      -- the chunk lost its runner. It gets a problem; the chunk goes on with the others.
      local ok, tasks = pcall(cjson.decode, body)
      if ok and type(tasks) == 'table' then
        for _, t in ipairs(tasks) do
          local task = type(t) == 'table' and t.t ~= nil and tostring(t.t) or nil
          if task and redis.call('HEXISTS', base .. 'results', task) == 0 then
            redis.call('HSET', base .. 'results', task, ARGV[6])
            redis.call('HINCRBY', meta, 'done', tonumber(t.n) or 1)
            poisoned = task
            break
          end
        end
      end
      attempt = 1
      redis.call('HSET', base .. 'attempts', n, 1)
    end
    if attempt > tonumber(ARGV[5]) then
      redis.call('HSET', meta, 'status', 'failed',
        'error', 'chunk ' .. n .. ' lost its worker ' .. (attempt - 1) .. ' times')
      redis.call('SREM', KEYS[4], job)
      redis.call('ZREM', KEYS[2], entry)
      redis.call('HDEL', KEYS[3], entry)
    else
      redis.call('ZADD', KEYS[2], ms + tonumber(ARGV[4]), entry)
      redis.call('HSET', KEYS[3], entry, ARGV[3])
      if status == 'queued' then redis.call('HSET', meta, 'status', 'running') end
      if redis.call('HGET', meta, 'feed') == '1' then
        redis.call('HSET', meta, 'worker', ARGV[3], 'taken', ms)
      end
      return {entry, attempt, body, redis.call('HGET', meta, 'payer') or '', poisoned}
    end
  end
end
return false
"""
)

# Extend a lease held by this token of a job still running: 1, else 0 (stop). Engine work
# whose poster is gone (its lease lapsed: killed) is cancelled.
# KEYS: leases, tokens, meta, poster, active; ARGV: entry, token, lease ms, job id.
RENEW = (
    NOW
    + """
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
local status = redis.call('HGET', KEYS[3], 'status')
if status ~= 'queued' and status ~= 'running' then return 0 end
if redis.call('HGET', KEYS[3], 'feed') == '1' and redis.call('EXISTS', KEYS[4]) == 0 then
  redis.call('HSET', KEYS[3], 'status', 'cancelled', 'error', 'its poster is gone')
  redis.call('SREM', KEYS[5], ARGV[4])
  return 0
end
redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[3]), ARGV[1])
return 1
"""
)

# Store a chunk's answers (whatever the job's state, while it exists: the results so far stay
# readable, and progress counts each task's slots when its answer is first stored) and count
# the chunk once. Returns 1 counted, 0 counted before, 2 the job is over (cancelled, failed),
# 3 a partial chunk of a running job (not counted, lease kept), -1 gone. A job with a feed
# (engine work) keeps each task's first answer and pushes its index there, and counts its
# progress by whole chunks.
# KEYS: meta, done, results, chunk_items, active, leases, tokens, items, attempts, feed, chunk
# ARGV: chunk, job id, ttl, entry, whole (1; 0 stopped early; 2 more follow: the lease stays
# whatever the job's state), search ms, then task index and answer pairs
COMPLETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local feed = redis.call('HGET', KEYS[1], 'feed') == '1'
local slots = {}
if not feed then
  local ok, tasks = pcall(cjson.decode, redis.call('GET', KEYS[11]) or '[]')
  if ok and type(tasks) == 'table' then
    for _, t in ipairs(tasks) do
      if type(t) == 'table' and t.t ~= nil then slots[tostring(t.t)] = tonumber(t.n) or 1 end
    end
  end
end
for i = 7, #ARGV, 2 do
  if not feed then
    if redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) == 1 then
      redis.call('HINCRBY', KEYS[1], 'done', slots[ARGV[i]] or 1)
    end
  elseif redis.call('HSETNX', KEYS[3], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('RPUSH', KEYS[10], ARGV[i])
  end
end
redis.call('HINCRBYFLOAT', KEYS[1], 'search_ms', ARGV[6])
local status = redis.call('HGET', KEYS[1], 'status')
local result
if ARGV[5] == '2' then
  result = 3
elseif status ~= 'queued' and status ~= 'running' then
  result = 2
elseif ARGV[5] ~= '1' then
  result = 3
elseif redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  result = 0
else
  if feed then redis.call('HINCRBY', KEYS[1], 'done', redis.call('HGET', KEYS[4], ARGV[1])) end
  if redis.call('SCARD', KEYS[2]) == tonumber(redis.call('HGET', KEYS[1], 'chunks')) then
    redis.call('HSET', KEYS[1], 'status', 'finished')
    redis.call('SREM', KEYS[5], ARGV[2])
  end
  result = 1
end
if result ~= 3 then
  redis.call('ZREM', KEYS[6], ARGV[4])
  redis.call('HDEL', KEYS[7], ARGV[4])
end
for _, key in ipairs({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[8], KEYS[9], KEYS[10]}) do
  redis.call('EXPIRE', key, ARGV[3])
end
return result
"""

# Cancel a queued or running job (its waiting chunks are dropped when reached, its running
# ones stop at their next renewal). KEYS: meta, active; ARGV: job id. Returns 1, or 0 if gone.
CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
if status == 'queued' or status == 'running' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled')
  redis.call('SREM', KEYS[2], ARGV[1])
end
return 1
"""

# Chunks join their owner's list, the owner joins the ring (at the head: the ring is served
# from its tail). KEYS: ring, the owner's list; ARGV: owner, then the chunks ("<job>:<n>").
WAIT = """
for i = 2, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
if not redis.call('LPOS', KEYS[1], ARGV[1]) then redis.call('LPUSH', KEYS[1], ARGV[1]) end
return 1
"""

# A worker's beat on Redis's clock, dropping the workers silent too long.
# KEYS: workers; ARGV: name, stale ms.
BEAT = (
    NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], ms, ARGV[1])
return 1
"""
)

# The beat of one worker within the stale time (its score), else false.
# KEYS: workers; ARGV: name, stale ms.
BEATING = (
    NOW
    + """
local beat = redis.call('ZSCORE', KEYS[1], ARGV[1])
if beat and tonumber(beat) >= ms - tonumber(ARGV[2]) then return beat end
return false
"""
)

# The workers that beat within the stale time. KEYS: workers; ARGV: stale ms.
ALIVE = (
    NOW
    + """
return redis.call('ZCOUNT', KEYS[1], ms - tonumber(ARGV[1]), '+inf')
"""
)


@dataclass(frozen=True, slots=True)
class JobKeys:
    """The Redis keys of one job."""

    id: str

    def _key(self, name: str) -> str:
        return f"{PREFIX}:{self.id}:{name}"

    @property
    def meta(self) -> str:
        """Hash: status, total, done (slots), chunks, created, owner, payer, search_ms,
        error."""
        return self._key("meta")

    @property
    def items(self) -> str:
        """List, one per input slot: {"t": task, "f": first occurrence} or {"p": problem}."""
        return self._key("items")

    @property
    def results(self) -> str:
        """Hash: task index -> answer body."""
        return self._key("results")

    @property
    def done(self) -> str:
        """Set of finished chunks."""
        return self._key("done")

    @property
    def attempts(self) -> str:
        """Hash: chunk -> times taken."""
        return self._key("attempts")

    @property
    def chunk_items(self) -> str:
        """Hash: chunk -> input slots it answers (repeats included)."""
        return self._key("chunk_items")

    @property
    def poster(self) -> str:
        """String (engine work only), expiring: the job's poster is alive. Once it expires,
        the job is cancelled (its chunks are dropped, its runners stop after the item in
        hand)."""
        return self._key("poster")

    @property
    def feed(self) -> str:
        """List (engine work only): indices of tasks answered, for the job's poster."""
        return self._key("feed")

    def chunk(self, n: int) -> str:
        return f"{PREFIX}:{self.id}:chunk:{n}"

    def entry(self, n: int) -> str:
        """The chunk's name in the queue and the leases: ``<job>:<n>``."""
        return f"{self.id}:{n}"
