-- paths.lua - a wrk script for the HTTP benchmarks (bench/run errors-scale):
-- each request GETs the next path of the file named after "--", each thread
-- starting at its own place; done() prints one JSON line (latency in
-- microseconds, non-2xx answers counted as errors).
local paths, i = {}, 0

function init(args)
  for line in io.lines(args[1]) do
    paths[#paths + 1] = line
  end
  math.randomseed(os.time() + #paths)
  i = math.random(#paths) - 1
end

function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'JSON {"requests":%d,"errors":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, e.connect + e.read + e.write + e.status + e.timeout,
    summary.duration, latency:percentile(50), latency:percentile(99), latency.max))
end
