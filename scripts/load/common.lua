-- Shared by the load scripts: deterministic tenants and texts, one counter per wrk thread.
--
-- Run wrk with ONE connection per thread (-c N -t N): wrk's response() does not say which
-- connection answered, so each thread pairs an answer with the one request it has in flight
-- (`asked`: the tenant, and for a planted question the right first hit). With more than one
-- request in flight on a thread every answer counts as "unpaired" (a wrong answer).
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
-- The planted facts (scripts/load/planted.py, which checks that this copy agrees): tenant t's
-- session "planted-THING" says "I named my THING NAME", NAME = PLANT_SYL_A[(t + j) % 10] ..
-- PLANT_SYL_B[(t // 10 + 3 j) % 10] for the j-th thing (0-based). Asked "what did I name my
-- THING?", the first hit must be that session's round, holding NAME.
PLANT_THINGS = {"iguana", "kayak", "telescope", "harmonica"}
PLANT_SYL_A = {"Bal", "Cor", "Dun", "Fen", "Gal", "Hol", "Jas", "Kel", "Lom", "Mir"}
PLANT_SYL_B = {"abar", "edric", "imon", "ova", "ulf", "enna", "orin", "astel", "ibeth", "othar"}
-- one search in PLANTED_EVERY asks a planted question (0: none, for a store without them)
PLANTED_EVERY = tonumber(os.getenv("MEMDEX_LOAD_PLANTED") or "4")
TENANTS = tonumber(os.getenv("MEMDEX_LOAD_TENANTS") or "100")
counter = 0
tid = 0

function pick(t) return t[math.random(#t)] end
function plant_name(t, j)
  return PLANT_SYL_A[(t + j) % 10 + 1] .. PLANT_SYL_B[(math.floor(t / 10) + 3 * j) % 10 + 1]
end

-- What this thread's connection asked and has not had answered: {kind, tenant, plant}.
asked = nil
in_flight = 0
probed = false
local function ask(kind, t, plant)
  -- wrk 4.1 calls request() once on the first thread's state before the thread starts, to
  -- check the request's syntax (script_verify_request); that request is never sent
  if tid == 1 and not probed then
    probed = true
    return
  end
  -- a request still unanswered: wrk reconnected after a socket error (or the thread has more
  -- than one connection); that request counts as wrong, the new one is the one in flight
  if in_flight > 0 then count(checks, "no answer (socket error, or -c above -t)") end
  asked = {kind = kind, tenant = "tenant-" .. t, t = t, plant = plant}
  in_flight = 1
end

K = 10
function search_body(t)
  local q, plant
  if PLANTED_EVERY > 0 and math.random(PLANTED_EVERY) == 1 then
    plant = math.random(0, #PLANT_THINGS - 1)
    q = "what did I name my " .. PLANT_THINGS[plant + 1] .. "?"
  else
    q = string.format(pick(templates), pick(words))
  end
  ask("search", t, plant)
  return '{"query":"' .. q .. '","k":' .. K .. '}'
end

function append_body(t)
  counter = counter + 1
  ask("append", t, nil)
  local id = string.format("load-%d-%d-%d", tid, os.time(), counter)
  local a, b = pick(words), pick(words)
  return '{"session_id":"' .. id .. '","date":"2024-03-01T10:00:00Z","turns":['
    .. '{"role":"user","content":"I talked about my ' .. a .. ' and the ' .. b .. ' today, note ' .. counter .. '"},'
    .. '{"role":"assistant","content":"Noted, your ' .. a .. '."},'
    .. '{"role":"user","content":"Also the ' .. b .. ' again, round two ' .. counter .. '"},'
    .. '{"role":"assistant","content":"Got it."}]}'
end

local headers = {["Content-Type"] = "application/json"}
function search_req()
  local t = math.random(0, TENANTS - 1)
  local body = search_body(t)
  return wrk.format("POST", "/v1/tenants/tenant-" .. t .. "/search", headers, body)
end
function append_req()
  local t = math.random(0, TENANTS - 1)
  local body = append_body(t)
  return wrk.format("POST", "/v1/tenants/tenant-" .. t .. "/sessions", headers, body)
end

local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
function init(args) math.randomseed(os.time() * 1000 + tid) end

-- wrk counts only socket errors and non-2xx/3xx. Every answer is checked here against what
-- its request asked (`a`): a search counts as ok only when it is a 200 whose body holds
-- exactly K hits and every "tenant" in it (the answer's own and each hit's) is the tenant
-- asked for, and, for a planted question, its first hit is the planted session's round with
-- the tenant's name for the thing; an append only when it is a 200/201 with its report,
-- naming the tenant asked for. Anything else is counted by kind and printed by done().
statuses = {}
checks = {}
planted_ok = 0
planted_wrong = 0
function count(t, k) t[k] = (t[k] or 0) + 1 end
function check_body(status, body, a)
  if a == nil then return "unpaired answer (run wrk with -c equal to -t)" end
  if status ~= 200 and status ~= 201 then return "status " .. status end
  local n = 0
  for t in body:gmatch('"tenant":"([^"]*)"') do
    n = n + 1
    if t ~= a.tenant then return "wrong tenant" end
  end
  if a.kind == "append" then
    if not body:find('"report"', 1, true) then return "append without report" end
    if n ~= 1 then return "tenant fields " .. n end
    return "ok"
  end
  if not body:find('"hits"', 1, true) then return "no hits array" end
  local hits = 0
  for _ in body:gmatch('"item_id":') do hits = hits + 1 end
  if hits ~= K then return "hit count " .. hits end
  if n ~= K + 1 then return "tenant fields " .. n end
  if a.plant ~= nil then
    local thing = PLANT_THINGS[a.plant + 1]
    if not body:find('"query":"what did I name my ' .. thing .. '?"', 1, true) then
      return "other query echoed"
    end
    -- the hits array's first object (hits are flat objects in rank order)
    local first = body:match('"hits":%[(%b{})')
    if first == nil or not first:find('"rank":1[,}]') then return "no first hit" end
    if first:match('"session_id":"([^"]*)"') ~= "planted-" .. thing
      or not first:find(plant_name(a.t, a.plant), 1, true) then
      return "wrong top hit"
    end
  end
  return "ok"
end
function response(status, headers, body)
  count(statuses, status)
  local a = asked
  if in_flight ~= 1 then a = nil end
  asked, in_flight = nil, 0
  local verdict = check_body(status, body, a)
  count(checks, verdict)
  if a ~= nil and a.plant ~= nil then
    if verdict == "ok" then planted_ok = planted_ok + 1 else planted_wrong = planted_wrong + 1 end
  end
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
  local ck, bad, good, pok, pwrong = {}, 0, 0, 0, 0
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("checks")) do ck[k] = (ck[k] or 0) + v end
    pok = pok + t:get("planted_ok")
    pwrong = pwrong + t:get("planted_wrong")
  end
  parts = {}
  for k, v in pairs(ck) do
    table.insert(parts, k .. "=" .. v)
    if k == "ok" then good = good + v else bad = bad + v end
  end
  io.write("checks: " .. table.concat(parts, " ") .. "\n")
  io.write(string.format("body_checked ok=%d wrong=%d ok_per_s=%.1f\n", good, bad,
    good / (summary.duration / 1e6)))
  io.write(string.format("planted_checked ok=%d wrong=%d (one search in %d)\n", pok, pwrong,
    PLANTED_EVERY))
  io.write(string.format("latency_us p50=%d p90=%d p99=%d max=%d\n", latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
