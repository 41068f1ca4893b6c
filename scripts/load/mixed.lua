-- 90 % searches, 10 % appends
dofile("scripts/load/common.lua")
request = function() if math.random(10) == 1 then return append_req() end return search_req() end
