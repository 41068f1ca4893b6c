-- Shared by the load scripts: deterministic tenants and texts, one counter per wrk thread.
local words = {"dog", "cat", "paris", "coffee", "sister", "guitar", "marathon", "job", "garden",
               "trip", "book", "piano", "doctor", "car", "birthday", "recipe", "movie", "camera"}
-- 12 question templates x 18 topics = 216 distinct queries (no query is answered from a cache:
-- memdex has none, every search embeds its text)
local templates = {"what did I say about my %s?", "when did we talk about the %s?",
                   "which %s did I mention last month?", "how is my %s doing these days?",
                   "what was the name of the %s I liked?", "where did I buy the %s?",
                   "remind me what happened with the %s after the trip", "who gave me the %s?",
                   "what advice did you give me on my %s?", "how much did the %s cost in the end?",
                   "what do I usually do with my %s on weekends?", "did I ever tell you about the %s?"}
counter = 0
tid = 0

function pick(t) return t[math.random(#t)] end
function tenant() return "tenant-" .. math.random(0, 99) end

function search_body()
  return '{"query":"' .. string.format(pick(templates), pick(words)) .. '","k":10}'
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

-- wrk counts only socket errors and non-2xx/3xx. Every answer is checked here: a search counts
-- as ok only when it is a 200 whose body holds exactly K hits (K = the k asked for) and every
-- "tenant" in it (the answer's own and each hit's) is the same one; an append only when it is a
-- 200/201. Anything else is counted by kind and printed by done().
K = 10
statuses = {}
checks = {}
function count(t, k) t[k] = (t[k] or 0) + 1 end
function check_body(status, body)
  if status ~= 200 and status ~= 201 then return "status " .. status end
  if not body:find('"hits"', 1, true) then
    if body:find('"report"', 1, true) then return "ok" end   -- an append's answer
    return "no hits array"
  end
  local hits = 0
  for _ in body:gmatch('"item_id":') do hits = hits + 1 end
  if hits ~= K then return "hit count " .. hits end
  local first, n = nil, 0
  for t in body:gmatch('"tenant":"([^"]*)"') do
    n = n + 1
    if first == nil then first = t elseif t ~= first then return "foreign hit" end
  end
  if n ~= K + 1 then return "tenant fields " .. n end
  return "ok"
end
function response(status, headers, body)
  count(statuses, status)
  count(checks, check_body(status, body))
end
function done(summary, latency, requests)
  local tot = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for k, v in pairs(s) do tot[k] = (tot[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(tot) do table.insert(parts, k .. "=" .. v) end
  io.write("statuses: " .. table.concat(parts, " ") .. "\n")
  local ck, bad, good = {}, 0, 0
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("checks")) do ck[k] = (ck[k] or 0) + v end
  end
  parts = {}
  for k, v in pairs(ck) do
    table.insert(parts, k .. "=" .. v)
    if k == "ok" then good = good + v else bad = bad + v end
  end
  io.write("checks: " .. table.concat(parts, " ") .. "\n")
  io.write(string.format("body_checked ok=%d wrong=%d ok_per_s=%.1f\n", good, bad,
    good / (summary.duration / 1e6)))
  io.write(string.format("latency_us p50=%d p90=%d p99=%d max=%d\n", latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
