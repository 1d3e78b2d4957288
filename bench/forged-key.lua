-- wrk script: every request carries a secret of the default prefix's checksummed shape whose checksum
-- is wrong (`npm run bench -- forged-keys`): 30 random base62 characters and 6 random ones in place of
-- the CRC-32, which match it once in 62^6.
local alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

local function random_base62(n)
  local chars = {}
  for i = 1, n do
    local at = math.random(1, 62)
    chars[i] = alphabet:sub(at, at)
  end
  return table.concat(chars)
end

request = function()
  return wrk.format("GET", nil, { ["x-api-key"] = "tg_" .. random_base62(36) })
end
