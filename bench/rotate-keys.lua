-- wrk script: every request carries the next secret from KEYS_FILE (one per line), so the proxy sees
-- many distinct keys (key cache, limiter counter per key) rather than one hot key. Each thread starts
-- at its own offset so the threads do not send the same key at the same moment.
local keys = {}
local counter = 0
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

function init(args)
  for line in io.lines(os.getenv("KEYS_FILE")) do
    if #line > 0 then keys[#keys + 1] = line end
  end
  counter = id * 7919
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, { ["Authorization"] = "Bearer " .. keys[(counter % #keys) + 1] })
end
