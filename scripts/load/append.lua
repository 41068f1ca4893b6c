dofile("scripts/load/common.lua")
request = append_req
