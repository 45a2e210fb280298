-- Helpers shared by the balancer implementations: endpoint keys, the
-- upstream-hash-by expression, and picking among endpoints a retry has not
-- tried yet.

local ngx_var = ngx.var
local math_random = math.random
local type = type
local tostring = tostring
local table_concat = table.concat

local _M = {}

-- "address:port", the key endpoints are known by in rings, score tables and
-- cookies (hashed there), and the form $upstream_addr reports for IPv4.
function _M.endpoint_key(endpoint)
    return endpoint.address .. ":" .. tostring(endpoint.port)
end

function _M.endpoint_keys(endpoints)
    local keys = {}
    for i, endpoint in ipairs(endpoints) do
        keys[i] = _M.endpoint_key(endpoint)
    end
    return keys
end

-- One string per endpoint list, so a sync that did not change the list can
-- keep a ring instead of rebuilding it.
function _M.signature(endpoints)
    return table_concat(_M.endpoint_keys(endpoints), ",")
end

local MAX_HASH_BY = 256

-- Parses an upstream-hash-by value such as "$host$request_uri" or
-- "$cookie_user-x" into parts: {var = "host"} or {text = "-x"}. Only
-- "$name" with name matching [A-Za-z0-9_]+ and literal text without "$" are
-- accepted (the controller validates the same); anything else returns nil
-- and an error, so a value that slipped through is never interpreted.
function _M.parse_hash_by(expr)
    if type(expr) ~= "string" or expr == "" then
        return nil, "empty"
    end
    if #expr > MAX_HASH_BY then
        return nil, "longer than " .. MAX_HASH_BY .. " characters"
    end
    local parts = {}
    local pos = 1
    local len = #expr
    while pos <= len do
        local name_start, name_end = expr:find("^%$[%w_]+", pos)
        if name_start then
            parts[#parts + 1] = { var = expr:sub(name_start + 1, name_end) }
            pos = name_end + 1
        else
            local text_end = select(2, expr:find("^[^%$]+", pos))
            if not text_end then
                return nil, "\"$\" not followed by a variable name at " .. pos
            end
            local text = expr:sub(pos, text_end)
            if text:find("[%c]") then
                return nil, "control character"
            end
            parts[#parts + 1] = { text = text }
            pos = text_end + 1
        end
    end
    return parts
end

-- The request's hash key: variables are read from ngx.var (an undefined or
-- unset variable counts as empty, as in NGINX's complex values).
function _M.eval_hash_by(parts)
    if #parts == 1 then
        local p = parts[1]
        if p.var then
            return ngx_var[p.var] or ""
        end
        return p.text
    end
    local out = {}
    for i, p in ipairs(parts) do
        if p.var then
            out[i] = ngx_var[p.var] or ""
        else
            out[i] = p.text
        end
    end
    return table_concat(out)
end

-- Marks endpoint `index` as tried by this request (attempt is the
-- per-request table that survives retries).
function _M.mark_tried(attempt, index)
    local tried = attempt.tried
    if not tried then
        tried = {}
        attempt.tried = tried
    end
    tried[index] = true
end

-- A random index among `candidates` (an array of endpoint indexes) that
-- attempt has not tried; any candidate when all were tried.
function _M.random_untried(candidates, attempt)
    local n = #candidates
    if n == 0 then
        return nil
    end
    local tried = attempt.tried
    if tried then
        local left = {}
        for _, index in ipairs(candidates) do
            if not tried[index] then
                left[#left + 1] = index
            end
        end
        if #left > 0 then
            return left[math_random(#left)]
        end
    end
    return candidates[math_random(n)]
end

return _M
