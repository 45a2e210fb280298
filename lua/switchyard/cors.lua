-- Cross-origin resource sharing (enable-cors and the cors-* annotations),
-- applied per request. A location with CORS passes its policy, as
-- literals the renderer checked, to rewrite (a preflight from an allowed
-- origin is answered 204 here, before auth and access rules, as
-- ingress-nginx answers it in the rewrite phase) and to header_filter
-- (every answer to an allowed origin gets the CORS headers; any other
-- origin gets none). Nothing is kept between the two phases: the origin is
-- matched again, which is one table lookup for an exact origin.
--
-- origins is "*" or a space-separated list of lower-case origins,
-- "scheme://host[:port]", where a host starting with "*." stands for any
-- one label in its place.

local ngx = ngx
local ngx_var = ngx.var
local ngx_header = ngx.header
local lower, sub, find, gmatch = string.lower, string.sub, string.find, string.gmatch

local _M = {}

-- origins string -> { any = bool, exact = { [origin] = true },
-- wildcards = { { prefix, suffix }, ... } }. The renderer writes few
-- distinct lists, so this stays small; a reload starts it afresh.
local parsed = {}

local function parse(origins)
    local set = { any = false, exact = {}, wildcards = {} }
    for origin in gmatch(origins, "[^ ]+") do
        if origin == "*" then
            set.any = true
        else
            local at = find(origin, "://*.", 1, true)
            if at then
                set.wildcards[#set.wildcards + 1] = { sub(origin, 1, at + 2), sub(origin, at + 4) }
            else
                set.exact[origin] = true
            end
        end
    end
    parsed[origins] = set
    return set
end

-- allowed returns what Access-Control-Allow-Origin says for this request,
-- or nil when the request gets no CORS headers.
local function allowed(origins)
    local set = parsed[origins] or parse(origins)
    if set.any then
        -- As ingress-nginx: "*" on every answer, with or without Origin.
        return "*"
    end
    local origin = ngx_var.http_origin
    if not origin then
        return nil
    end
    local key = lower(origin)
    if set.exact[key] then
        return origin
    end
    for _, w in ipairs(set.wildcards) do
        local prefix, suffix = w[1], w[2]
        local label_end = #key - #suffix
        if label_end > #prefix and sub(key, 1, #prefix) == prefix and sub(key, label_end + 1) == suffix
            and find(sub(key, #prefix + 1, label_end), "^[%w-]+$") then
            return origin
        end
    end
    return nil
end

-- rewrite_by_lua: answer a preflight (OPTIONS) from an allowed origin;
-- header_filter adds the CORS headers to that answer too.
function _M.rewrite(origins)
    if ngx_var.request_method ~= "OPTIONS" or not allowed(origins) then
        return
    end
    -- ingress-nginx also sets Content-Type and Content-Length: 0, which
    -- NGINX never sends with a 204.
    return ngx.exit(204)
end

-- header_filter_by_lua: the CORS headers, replacing any the backend sent,
-- on every answer (errors included) to an allowed origin.
function _M.header_filter(origins, methods, headers, expose, credentials, max_age)
    local origin = allowed(origins)
    if not origin then
        return
    end
    ngx_header["Access-Control-Allow-Origin"] = origin
    if origin ~= "*" then
        -- The answer depends on the Origin: caches must keep one per
        -- origin (ingress-nginx does not say so; browsers' caches need it).
        local vary = ngx_header["Vary"]
        if vary == nil then
            ngx_header["Vary"] = "Origin"
        elseif type(vary) == "table" then
            vary[#vary + 1] = "Origin"
            ngx_header["Vary"] = vary
        else
            ngx_header["Vary"] = vary .. ", Origin"
        end
    end
    ngx_header["Access-Control-Allow-Methods"] = methods
    ngx_header["Access-Control-Allow-Headers"] = headers
    ngx_header["Access-Control-Max-Age"] = max_age
    if credentials then
        ngx_header["Access-Control-Allow-Credentials"] = "true"
    end
    if expose ~= "" then
        ngx_header["Access-Control-Expose-Headers"] = expose
    end
end

return _M
