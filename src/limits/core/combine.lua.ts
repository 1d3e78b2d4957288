/**
 * The combiner (combine.ts) in the consume script, for a batch of requests: each is admitted when
 * every limit still has room for its units, and every balance holds its cost, after the ones admitted
 * before it, in arrival order (as if they had come one by one).
 *
 * `fitRuns(runs, room, placeRoom)`: `runs` the requests as runs of one cost ({requests, cost, …}),
 * `room` the fewest units any window, bucket or balance holds, `placeRoom` the fewest places any
 * concurrency limit holds (one a request, whatever its cost). Returns how many of each run fit (its
 * first ones), the units wanted, the units admitted and the requests admitted.
 */
export const COMBINE_LUA = `
local function fitRuns(runs, room, placeRoom)
  local fits, want, admitted, requests = {}, 0, 0, 0
  for r = 1, #runs, 2 do
    local n, cost = runs[r], runs[r + 1]
    local fit = math.max(0, math.min(n, math.floor((room - admitted) / cost), placeRoom - requests))
    want = want + n * cost
    admitted = admitted + fit * cost
    requests = requests + fit
    fits[#fits + 1] = fit
  end
  return fits, want, admitted, requests
end
`;
