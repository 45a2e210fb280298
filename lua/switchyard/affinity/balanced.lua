-- Sticky sessions, affinity-mode "balanced" (the default): a new session
-- gets a random key in its cookie, and the key is placed on a
-- consistent-hash ring of the endpoints (switchyard.util.chash_ring). The cookie
-- names no address. When endpoints change, a session moves only if the ring
-- moved its key: sessions of removed endpoints spread over the others, and
-- new endpoints take over about their share of sessions, so load rebalances
-- on scale-up, as in ingress-nginx's sticky_balanced.
-- See switchyard.affinity.sticky for the common part.

local sticky = require("switchyard.affinity.sticky")
local ring = require("switchyard.util.chash_ring")
local util = require("switchyard.util.endpoints")

local md5 = ngx.md5
local ngx_now = ngx.now
local math_random = math.random
local tostring = tostring

local mode = {}

-- A new session's key draws are bounded, as in ingress-nginx (20): with
-- change-on-failure every endpoint may already have failed.
local MAX_DRAWS = 20

function mode.prepare(self, backend)
    self.ring = ring.new(util.endpoint_keys(backend.endpoints))
end

function mode.find(self, value)
    return self.ring:find(value)
end

local counter = 0

local function new_key()
    counter = counter + 1
    -- Unpredictable enough to spread sessions; it is no secret.
    return md5(tostring(ngx_now()) .. ":" .. tostring(math_random()) .. ":" .. ngx.worker.pid() .. ":" .. counter)
end

function mode.pick(self, attempt)
    local tried = attempt.tried
    local key, index
    for _ = 1, MAX_DRAWS do
        key = new_key()
        index = self.ring:find(key)
        if not (tried and tried[index]) then
            break
        end
    end
    return index, key
end

return sticky.class(mode)
