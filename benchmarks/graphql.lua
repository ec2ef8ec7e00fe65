-- wrk script: POST GraphQL requests read from a file, and count the ones that failed.
--
--   wrk -t1 -c16 -d10s -s benchmarks/graphql.lua http://127.0.0.1:8000 -- REQUESTS
--
-- REQUESTS holds one request per line: a bearer token, a tab, the JSON body.
-- Each connection cycles through them from its own starting line. A request
-- fails when it is not HTTP 200 or its body carries "errors": wrk alone would
-- count a GraphQL error as a success. done() prints one JSON line (times in
-- microseconds) for benchmarks/throughput.py to read.

local prepared = {}
failed = 0
local position = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do
    local token, body = line:match("^([^\t]+)\t(.+)$")
    prepared[#prepared + 1] = wrk.format("POST", "/graphql", {
      ["Content-Type"] = "application/json",
      ["Authorization"] = "Bearer " .. token,
    }, body)
  end
  math.randomseed(os.time() + tonumber(tostring(prepared):match("0x(%x+)") or "0", 16))
  position = math.random(#prepared)
end

function request()
  position = position % #prepared + 1
  return prepared[position]
end

function response(status, headers, body)
  if status ~= 200 or body:find('"errors"', 1, true) then
    failed = failed + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("failed")
  end
  local errors = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "p50_us": %d, "p95_us": %d, "p99_us": %d, "max_us": %d,'
      .. ' "failed": %d, "socket_errors": %d}\n',
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max,
    bad, errors.connect + errors.read + errors.write + errors.timeout))
end
