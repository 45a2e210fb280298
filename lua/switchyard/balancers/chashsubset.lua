-- Consistent hash to a subset ("upstream-hash-by-subset"): the endpoints,
-- sorted, are cut into subsets of "upstream-hash-by-subset-size" (default 3;
-- the last one is filled up from the start of the list), the request's key
-- picks a subset on a ring, and an endpoint is picked at random within it.
-- So one key spreads over a few endpoints instead of one, as in
-- ingress-nginx's chashsubset. Interface: see switchyard.balancers.round_robin.

local ring = require("switchyard.util.chash_ring")
local util = require("switchyard.util.endpoints")

local ngx_log = ngx.log
local ERR = ngx.ERR
local math_random = math.random
local math_floor = math.floor
local math_ceil = math.ceil
local setmetatable = setmetatable
local table_sort = table.sort
local table_concat = table.concat
local ipairs = ipairs
local tonumber = tonumber
local type = type

local _M = {}
local mt = { __index = _M }

local DEFAULT_SUBSET_SIZE = 3
local MAX_SUBSET_SIZE = 1000

local function config_of(backend)
    local cfg = backend.upstreamHashByConfig
    if type(cfg) ~= "table" then
        return nil, DEFAULT_SUBSET_SIZE
    end
    local size = tonumber(cfg["upstream-hash-by-subset-size"])
    if not size or size < 1 or size > MAX_SUBSET_SIZE or size ~= math_floor(size) then
        size = DEFAULT_SUBSET_SIZE
    end
    return cfg["upstream-hash-by"], size
end

-- subsets[i] is an array of endpoint indexes. Sorting by key makes the cut
-- independent of the order the endpoints arrived in.
local function make_subsets(endpoints, size)
    local order = {}
    for i = 1, #endpoints do
        order[i] = i
    end
    local keys = util.endpoint_keys(endpoints)
    table_sort(order, function(a, b) return keys[a] < keys[b] end)
    local n = #order
    local subsets = {}
    if n == 0 then
        return subsets
    end
    size = size < n and size or n
    local count = math_ceil(n / size)
    for s = 1, count do
        local members = {}
        for j = 1, size do
            members[j] = order[((s - 1) * size + j - 1) % n + 1]
        end
        subsets[s] = members
    end
    return subsets
end

function _M.new(backend)
    local self = setmetatable({}, mt)
    self:sync(backend)
    return self
end

function _M:sync(backend)
    self.endpoints = backend.endpoints
    local expr, size = config_of(backend)
    if expr ~= self.expr then
        self.expr = expr
        local parts, err = util.parse_hash_by(expr)
        if not parts then
            ngx_log(ERR, "switchyard: backend ", backend.name, ": unusable upstream-hash-by: ", err)
        end
        self.parts = parts
    end
    local signature = size .. "|" .. util.signature(backend.endpoints)
    if signature ~= self.signature then
        self.signature = signature
        self.subsets = make_subsets(backend.endpoints, size)
        -- Subsets are named by their members, so a subset whose endpoints
        -- stay keeps its place on the ring.
        local keys = util.endpoint_keys(backend.endpoints)
        local ids = {}
        for s, members in ipairs(self.subsets) do
            local names = {}
            for j, i in ipairs(members) do
                names[j] = keys[i]
            end
            ids[s] = table_concat(names, ",")
        end
        self.ring = ring.new(ids)
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
        if not attempt.subset then
            local s = self.ring:find(util.eval_hash_by(self.parts))
            attempt.subset = self.subsets[s]
        end
        -- Random within the subset, preferring members a retry has not
        -- tried; once the subset is exhausted a retry may leave it.
        local subset = attempt.subset
        index = util.random_untried(subset, attempt)
        if attempt.tried and attempt.tried[index] then
            local all = {}
            for i = 1, n do all[i] = i end
            index = util.random_untried(all, attempt)
        end
    end
    util.mark_tried(attempt, index)
    return endpoints[index]
end

return _M
