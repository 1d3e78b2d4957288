-- wrk script: every request carries a secret of the default prefix's checksummed shape whose checksum
-- is wrong (`npm run bench -- forged-keys`): 30 random base62 characters and 6 random ones in place of
-- the CRC-32, which match it once in 62^6. The requests are written once per thread, 10,000 different
-- secrets sent in turn: drawn per request in Lua, wrk spent more of the two cores on each forged request
-- than on a preflight (a fixed request), and the forged side was measured slower for wrk's own work.
-- Tollgate keeps nothing of a wrong secret, so a secret sent again is refused as a new one is.
local alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
local POOL = 10000
local requests = {}
local sent = 0

local function random_base62(n)
  local chars = {}
  for i = 1, n do
    local at = math.random(1, 62)
    chars[i] = alphabet:sub(at, at)
  end
  return table.concat(chars)
end

init = function()
  for i = 1, POOL do
    requests[i] = wrk.format("GET", nil, { ["x-api-key"] = "tg_" .. random_base62(36) })
  end
end

request = function()
  sent = sent % POOL + 1
  return requests[sent]
end
