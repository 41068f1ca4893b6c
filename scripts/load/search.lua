dofile("scripts/load/common.lua")
request = search_req
