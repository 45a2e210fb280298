-- Consistent-hash balancer ("load-balance: chash", or any backend whose
-- upstreamHashByConfig has an "upstream-hash-by"): the request's key, built
-- from NGINX variables such as "$request_uri", picks an endpoint on a ring
-- (switchyard.util.chash_ring), so the same key keeps hitting the same endpoint
-- and an endpoint change moves only the keys of the endpoints that changed.
-- Interface: see switchyard.balancers.round_robin.

local ring = require("switchyard.util.chash_ring")
local util = require("switchyard.util.endpoints")

local ngx_log = ngx.log
local ERR = ngx.ERR
local math_random = math.random
local setmetatable = setmetatable
local type = type

local _M = {}
local mt = { __index = _M }

local function hash_by_of(backend)
    local cfg = backend.upstreamHashByConfig
    return type(cfg) == "table" and cfg["upstream-hash-by"] or nil
end

function _M.new(backend)
    local self = setmetatable({}, mt)
    self:sync(backend)
    return self
end

function _M:sync(backend)
    self.endpoints = backend.endpoints
    local expr = hash_by_of(backend)
    if expr ~= self.expr then
        self.expr = expr
        local parts, err = util.parse_hash_by(expr)
        if not parts then
            -- Requests still get an endpoint (at random) rather than a 503
            -- for a value the controller should have rejected.
            ngx_log(ERR, "switchyard: backend ", backend.name, ": unusable upstream-hash-by: ", err)
        end
        self.parts = parts
    end
    -- Rebuilding a ring is the expensive part of a sync: only when the
    -- endpoint list really changed.
    local signature = util.signature(backend.endpoints)
    if signature ~= self.signature then
        self.signature = signature
        self.ring = ring.new(util.endpoint_keys(backend.endpoints))
    end
end

function _M:balance(attempt)
    local endpoints = self.endpoints
    local n = #endpoints
    if n == 0 then
        return nil
    end
    local index
    if not self.parts then
        index = math_random(n)
    else
        if not attempt.hash_key then
            attempt.hash_key = util.eval_hash_by(self.parts)
        end
        -- A retry walks on along the ring past what it tried, so it too is
        -- the same for every request with this key.
        index = self.ring:find(attempt.hash_key, attempt.tried) or math_random(n)
    end
    util.mark_tried(attempt, index)
    return endpoints[index]
end

return _M
