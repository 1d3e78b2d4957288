-- wrk script: the CORS preflight of bench/preflight.lua, handed to wrk by a `request` function as
-- bench/forged-key.lua hands its requests (`npm run bench -- forged-keys`): wrk calls into Lua once per
-- request on both sides, so what differs between the two loads is Tollgate's work, not wrk's.
local preflight

init = function()
  preflight = wrk.format("OPTIONS", nil, {
    ["Origin"] = "https://app.example.com",
    ["Access-Control-Request-Method"] = "GET",
    ["Access-Control-Request-Headers"] = "authorization",
  })
end

request = function()
  return preflight
end
