-- Shared by the load scripts: deterministic tenants and texts, one counter per wrk thread.
local words = {"dog", "cat", "paris", "coffee", "sister", "guitar", "marathon", "job", "garden",
               "trip", "book", "piano", "doctor", "car", "birthday", "recipe", "movie", "camera"}
local queries = {"what is my dog's name?", "where did my sister move?", "which book am I reading?",
                 "when is the birthday party?", "what car did I buy?", "how was the trip to paris?",
                 "what did the doctor say?", "which recipe did I try?"}
counter = 0
tid = 0

function pick(t) return t[math.random(#t)] end
function tenant() return "tenant-" .. math.random(0, 99) end

function search_body()
  return '{"query":"' .. pick(queries) .. '","k":10}'
end

function append_body()
  counter = counter + 1
  local id = string.format("load-%d-%d-%d", tid, os.time(), counter)
  local a, b = pick(words), pick(words)
  return '{"session_id":"' .. id .. '","date":"2024-03-01T10:00:00Z","turns":['
    .. '{"role":"user","content":"I talked about my ' .. a .. ' and the ' .. b .. ' today, note ' .. counter .. '"},'
    .. '{"role":"assistant","content":"Noted, your ' .. a .. '."},'
    .. '{"role":"user","content":"Also the ' .. b .. ' again, round two ' .. counter .. '"},'
    .. '{"role":"assistant","content":"Got it."}]}'
end

local headers = {["Content-Type"] = "application/json"}
function search_req() return wrk.format("POST", "/v1/tenants/" .. tenant() .. "/search", headers, search_body()) end
function append_req() return wrk.format("POST", "/v1/tenants/" .. tenant() .. "/sessions", headers, append_body()) end

local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
function init(args) math.randomseed(os.time() * 1000 + tid) end

-- wrk counts only socket errors and non-2xx/3xx; print status codes seen to be explicit
statuses = {}
function response(status, headers, body) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency, requests)
  local tot = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for k, v in pairs(s) do tot[k] = (tot[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(tot) do table.insert(parts, k .. "=" .. v) end
  io.write("statuses: " .. table.concat(parts, " ") .. "\n")
  io.write(string.format("latency_us p50=%d p90=%d p99=%d max=%d\n", latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
