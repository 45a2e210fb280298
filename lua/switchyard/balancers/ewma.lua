-- Peak-EWMA balancer ("load-balance: ewma"): each endpoint has a score, the
-- exponentially weighted moving average of its response time (connect +
-- time to the response header, $upstream_header_time), which jumps up at once when a response is
-- slower than the average ("peak") and otherwise decays with DECAY_TIME.
-- A request compares two random endpoints ("power of two choices") and takes
-- the one with the lower score, so load shifts away from slow endpoints
-- without sending everything to the single fastest one.
--
-- Scores are per worker (kept in this instance), unlike ingress-nginx which
-- keeps them in shared dicts with locks: a worker learns from its own
-- requests only, but no lock or shared-dict write is on the request path,
-- and with few workers each still sees plenty of samples.
--
-- Scores are fed by switchyard.balancer.log(), which must run in
-- log_by_lua (the http-level log_by_lua_block in nginx.conf.tmpl).
-- Interface: see switchyard.balancers.round_robin, plus instance:log(attempt).

local util = require("switchyard.util.endpoints")

local ngx_now = ngx.now
local ngx_var = ngx.var
local math_exp = math.exp
local math_random = math.random
local setmetatable = setmetatable
local tonumber = tonumber
local ipairs = ipairs

local _M = {}
local mt = { __index = _M }

-- Seconds over which an old measurement loses about 63% of its weight; as
-- in ingress-nginx.
local DECAY_TIME = 10

local function decayed(score, now)
    local td = now - score.at
    if td <= 0 then
        return score.ewma
    end
    return score.ewma * math_exp(-td / DECAY_TIME)
end

function _M.new(backend)
    local self = setmetatable({ scores = {} }, mt)
    self:sync(backend)
    return self
end

-- Endpoints that stay keep their scores. New ones start at the average of
-- the current scores: at 0 they would look fastest and get a burst of
-- traffic before their first measurement arrives.
function _M:sync(backend)
    local now = ngx_now()
    local old = self.scores
    local keys = util.endpoint_keys(backend.endpoints)
    local sum, count = 0, 0
    for _, key in ipairs(keys) do
        local score = old[key]
        if score then
            sum = sum + decayed(score, now)
            count = count + 1
        end
    end
    local average = count > 0 and sum / count or 0
    local scores = {}
    for _, key in ipairs(keys) do
        -- at = 0 for a fresh endpoint: its first measurement replaces the
        -- guess entirely.
        scores[key] = old[key] or { ewma = average, at = 0 }
    end
    self.scores = scores
    self.keys = keys
    self.endpoints = backend.endpoints
end

function _M:score(key, now)
    local score = self.scores[key]
    return score and decayed(score, now) or 0
end

function _M:balance(attempt)
    local endpoints = self.endpoints
    local n = #endpoints
    if n == 0 then
        return nil
    end
    -- Candidates: what this request has not tried yet (all on a first try).
    local candidates = {}
    local tried = attempt.tried
    for i = 1, n do
        if not (tried and tried[i]) then
            candidates[#candidates + 1] = i
        end
    end
    if #candidates == 0 then
        for i = 1, n do
            candidates[i] = i
        end
    end
    local index
    local c = #candidates
    if c == 1 then
        index = candidates[1]
    else
        local a = math_random(c)
        local b = math_random(c - 1)
        if b >= a then
            b = b + 1 -- two distinct candidates
        end
        local now = ngx_now()
        local ia, ib = candidates[a], candidates[b]
        index = self:score(self.keys[ia], now) <= self:score(self.keys[ib], now) and ia or ib
    end
    util.mark_tried(attempt, index)
    return endpoints[index]
end

-- Records one measured response time for the endpoint `key`.
function _M:observe(key, rtt, now)
    local score = self.scores[key]
    if not score then
        return -- removed meanwhile, or not ours
    end
    local current = decayed(score, now)
    local td = now - score.at
    if rtt > current then
        -- Peak: a slow response counts fully at once.
        score.ewma = rtt
    else
        local weight = math_exp(-(td > 0 and td or 0) / DECAY_TIME)
        score.ewma = current * weight + rtt * (1 - weight)
    end
    score.at = now
end

-- Splits NGINX's per-try lists ("a, b : c") into their items.
local function items(value)
    local out = {}
    if not value then
        return out
    end
    for item in value:gmatch("[^,%s]+") do
        if item ~= ":" then
            out[#out + 1] = item
        end
    end
    return out
end

-- log_by_lua: feeds this request's upstream timings into the scores. Each
-- try is one entry in $upstream_addr and the timing variables; a try that
-- got no header ("-") teaches nothing about speed and is skipped.
function _M:log()
    local addrs = items(ngx_var.upstream_addr)
    local header = items(ngx_var.upstream_header_time)
    local now = ngx_now()
    for i, addr in ipairs(addrs) do
        -- NGINX measures $upstream_header_time from the start of the try,
        -- so it already includes $upstream_connect_time (ingress-nginx adds
        -- the two, counting the connect twice).
        local rtt = tonumber(header[i])
        if rtt then
            -- $upstream_addr writes IPv6 as "[::1]:80"; our keys are "::1:80".
            local key = addr:gsub("^%[(.*)%](:%d+)$", "%1%2")
            self:observe(key, rtt, now)
        end
    end
end

return _M
