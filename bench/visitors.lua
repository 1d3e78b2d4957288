-- wrk script (`npm run bench -- visitors`): each request comes from one of VISITORS client addresses in
-- turn, as a trusted proxy in front says (X-Forwarded-For, TRUST_PROXY=1); VISITORS=0: every request
-- from an address of its own (10.x.y.z), for the memory of that many distinct visitors.
local visitors = tonumber(os.getenv("VISITORS") or "50")
-- Where this run's distinct addresses start: after those of the runs before it.
local offset = tonumber(os.getenv("OFFSET") or "0")
local n = 0
local thread_offset = 0
local threads = 0

function setup(thread)
  thread:set("thread_offset", threads)
  threads = threads + 1
end

function request()
  n = n + 1
  local i = visitors > 0 and (n % visitors) or (offset + thread_offset * 8000000 + n)
  local address = string.format("10.%d.%d.%d", math.floor(i / 65536) % 256, math.floor(i / 256) % 256, i % 256)
  -- Set in wrk.headers (this thread's), which also hold the key given with -H.
  wrk.headers["X-Forwarded-For"] = address
  return wrk.format()
end
