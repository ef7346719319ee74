-- load_queue(name): the queue's settings as a table, or nil when there is no such queue
--- @include "ledger/lua/lib/load_hash.lua"
local function load_queue(name)
  return load_hash(K.queue(name))
end
