-- Consistent-hash ring with virtual nodes, shared by the chash, chashsubset
-- and sticky_balanced balancers. Debian ships no resty.chash, so this is our
-- own: each node gets VNODES points on a 32-bit ring; a key maps to the
-- first point at or after its hash. Removing a node moves only the keys whose
-- points belonged to it; adding one takes about 1/n of the keys.

local md5_bin = ngx.md5_bin
local string_byte = string.byte
local table_sort = table.sort
local setmetatable = setmetatable
local ipairs = ipairs
local math_floor = math.floor

local _M = {}
local mt = { __index = _M }

-- 160 points per node keep the share of each node within a few percent of
-- 1/n for the endpoint counts of real Services; a ring of 100 endpoints is
-- 16000 points, built once per endpoint change and worker.
local VNODES = 160

-- First four bytes of the MD5 as an unsigned 32-bit number. MD5 rather than
-- CRC32: CRC32 is linear, so points of "addr#1", "addr#2", ... cluster.
local function hash32(s)
    local a, b, c, d = string_byte(md5_bin(s), 1, 4)
    return ((a * 256 + b) * 256 + c) * 256 + d
end
_M.hash32 = hash32

-- ids: array of distinct strings naming the nodes (e.g. "10.0.0.1:8080");
-- the ring returns indexes into that array.
function _M.new(ids)
    local points = {}
    for index, id in ipairs(ids) do
        for v = 1, VNODES do
            points[#points + 1] = { hash32(id .. "#" .. v), index }
        end
    end
    -- Ties (astronomically rare) are broken by node index so every worker
    -- builds the same ring.
    table_sort(points, function(x, y)
        if x[1] ~= y[1] then
            return x[1] < y[1]
        end
        return x[2] < y[2]
    end)
    local hashes, nodes = {}, {}
    for i, p in ipairs(points) do
        hashes[i], nodes[i] = p[1], p[2]
    end
    return setmetatable({ hashes = hashes, nodes = nodes, size = #ids }, mt)
end

-- Position of the first point at or after h (binary search), wrapping.
local function position(hashes, h)
    local lo, hi = 1, #hashes
    if hi == 0 then
        return nil
    end
    if h > hashes[hi] then
        return 1
    end
    while lo < hi do
        local mid = math_floor((lo + hi) / 2)
        if hashes[mid] < h then
            lo = mid + 1
        else
            hi = mid
        end
    end
    return lo
end

-- find(key) -> node index, or nil on an empty ring.
-- find(key, skip) walks on past nodes for which skip[index] is true (the
-- endpoints a retry already tried), so the choice stays deterministic per
-- key; nil when every node is skipped.
function _M:find(key, skip)
    local hashes, nodes = self.hashes, self.nodes
    local pos = position(hashes, hash32(key))
    if not pos then
        return nil
    end
    if not skip then
        return nodes[pos]
    end
    local total = #hashes
    local seen, distinct = {}, 0
    for i = 0, total - 1 do
        local node = nodes[(pos - 1 + i) % total + 1]
        if not skip[node] then
            return node
        end
        if not seen[node] then
            seen[node] = true
            distinct = distinct + 1
            if distinct >= self.size then
                return nil
            end
        end
    end
    return nil
end

return _M
