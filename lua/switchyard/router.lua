-- Hosts routed in Lua (issue 12). A host whose locations need no NGINX
-- directive of their own has no server block: the renderer publishes its
-- route (its locations, in the order NGINX would see them) and the applier
-- posts it to /configuration/routes, so adding, changing or removing such
-- a host never reloads NGINX. Requests for it reach the catch-all server,
-- whose server_rewrite hook (dispatch) sends them to the named location
-- @switchyard_router; there rewrite() picks the location as NGINX would
-- have and hands the request to the same ingress.lua and balancer.lua a
-- server block's location calls.
--
-- Which features a Lua-routed host may use is decided in one place, the
-- renderer's stages/renderer/routes.go (dynamicServer); everything else
-- keeps its server block.
--
-- Routes live in the switchyard_config dict, one key per host, stored as
-- backends are (util/backend_store.lua, kind "routes"): a worker drops
-- from its cache only the hosts a new version changed, and decodes a host
-- again on its next request.

local cjson = require("cjson.safe")
local backend_store = require("switchyard.util.backend_store")
local balancer = require("switchyard.balancer")
local cidr = require("switchyard.util.cidr")
local cors = require("switchyard.cors")
local ingress = require("switchyard.ingress")

local ngx = ngx
local ngx_var = ngx.var
local ngx_req = ngx.req
local io_open = io.open
local ngx_exit = ngx.exit
local ngx_exec = ngx.exec
local ngx_redirect = ngx.redirect
local ngx_log = ngx.log
local ngx_re_find = ngx.re.find
local ngx_re_match = ngx.re.match
local ERR = ngx.ERR
local json_decode = cjson.decode
local str_sub = string.sub
local str_find = string.find
local str_gsub = string.gsub
local tbl_sort = table.sort
local tbl_concat = table.concat
local ipairs = ipairs
local pairs = pairs
local type = type
local tonumber = tonumber

local _M = {}

local store = backend_store.new("routes")
_M.store = store

-- The location modifiers a route may use, as the renderer writes them in a
-- server block: exact, protected prefix (no regex after it), prefix,
-- case-insensitive regex, regex.
local MATCHES = { ["="] = true, ["^~"] = true, [""] = true, ["~*"] = true, ["~"] = true }
local KINDS = { proxy = true, ["not-found"] = true, redirect = true }

-- permanent-redirect and temporal-redirect: the codes ngx.redirect sends
-- as the location's "return" would, and the URLs the renderer accepts
-- (features.RedirectURLPattern).
local REDIRECT_CODES = { [301] = true, [302] = true, [303] = true, [307] = true, [308] = true }
local REDIRECT_URL = [[^https?://[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?(/[A-Za-z0-9._~!&()*+,=:@%/?#-]*)?$]]

-- The most a proxy timeout may be, in seconds (a year, as the proxy
-- plugin's MaxProxyTimeout).
local MAX_TIMEOUT = 365 * 24 * 3600

-- What the renderer checked upstream-vhost and connection-proxy-header
-- against, checked again: they become request headers, so nothing but a
-- host with a port, or tokens, may get through.
local UPSTREAM_VHOST = [[^[A-Za-z0-9._:\[\]-]{1,260}$]]
local CONNECTION_HEADER = [[^[A-Za-z0-9-]{1,64}(, ?[A-Za-z0-9-]{1,64}){0,7}$]]

-- rewrite-target as router.lua does it: a path without "?" whose only "$"
-- are $1-$9 (features.RewriteTargetPattern, less the query).
local REWRITE_TARGET = [[^/(?:[A-Za-z0-9._~!&()*+,=:@%/-]|\$[1-9])*$]]

-- A body limit in bytes: proxy-body-size's bound is 1024g.
local MAX_BODY_LIMIT = 1024 * 1024 * 1024 * 1024

-- is_whole says whether v is a whole number from low to high.
local function is_whole(v, low, high)
    return type(v) == "number" and v >= low and v <= high and v == math.floor(v)
end

-- The source ranges of a location (allowlist-source-range,
-- denylist-source-range, the ConfigMap's whitelist-source-range,
-- denylist-source-range and block-cidrs) arrive as the renderer's allow
-- and deny lines, in the order a server block's location writes them
-- (stages/renderer/access.go): "deny CIDR", "allow CIDR", "deny all", and
-- "satisfy any" where the location has it (only without auth, where it
-- decides nothing else).

-- compile_access parses a location's access lines once, into the rules
-- access_denied walks; nil and why for a line that is not one of those.
-- v4 says whether there is an IPv4 rule (or "all"), which decides how
-- NGINX checks an IPv4-mapped client (access_denied).
local function compile_access(lines)
    local acc = { rules = {}, v4 = false, quiet = false }
    for i, line in ipairs(lines) do
        if type(line) ~= "string" then
            return nil, "access line " .. i .. " is not a string"
        end
        if line == "satisfy any" then
            acc.quiet = true
        else
            local verb, arg = string.match(line, "^(%l+) (%S+)$")
            if verb ~= "allow" and verb ~= "deny" then
                return nil, "access line " .. i .. " is not allow or deny"
            end
            local rule = { deny = verb == "deny" }
            if arg == "all" then
                rule.all, acc.v4 = true, true
            else
                local c, err = cidr.parse(arg)
                if not c then
                    return nil, "access line " .. i .. ": " .. arg .. ": " .. err
                end
                rule.cidr = c
                acc.v4 = acc.v4 or #c.bytes == 4
            end
            acc.rules[#acc.rules + 1] = rule
        end
    end
    return acc
end
_M.compile_access = compile_access

-- access_denied says whether NGINX's allow and deny lines acc deny a
-- client at addr, the bytes of its address ($binary_remote_addr, after
-- the realip module), as NGINX's access module decides: the first rule of
-- the client's family (or "all") that matches; none lets it in. An
-- IPv4-mapped IPv6 client (::ffff:a.b.c.d) is checked as its IPv4 address
-- when there is any IPv4 rule, else as IPv6. The bytes are read, not
-- $remote_addr parsed: parsing it took a microsecond of every request
-- (patterns LuaJIT does not compile). The proxied listeners are TCP, so
-- the bytes are 4 or 16; anything else (nil, a unix socket's "unix:")
-- matches "all" only.
local function access_denied(acc, addr)
    if type(addr) ~= "string" or (#addr ~= 4 and #addr ~= 16) then
        addr = nil
    end
    if addr and acc.v4 then
        addr = cidr.unmapped(addr) or addr
    end
    for _, r in ipairs(acc.rules) do
        if r.all or (addr and cidr.contains(r.cidr, addr)) then
            return r.deny
        end
    end
    return false
end
_M.access_denied = access_denied

-- check_access answers 403 when a location's source ranges deny the
-- client, logging it as NGINX's access module does (not under satisfy
-- any, as NGINX does not either).
local function check_access(acc)
    if access_denied(acc, ngx_var.binary_remote_addr) then
        if not acc.quiet then
            ngx_log(ERR, "access forbidden by rule")
        end
        return ngx_exit(403)
    end
end

-- host -> compiled route; filled on first use, emptied of what a new
-- version changed. Hosts without a route are not cached: any Host header
-- can be sent, and the cache must not grow with them.
local cache = {}
local loaded_version

local function sync(dict)
    local version = store.version(dict)
    if version == loaded_version then
        return
    end
    local names = store.changes(dict, loaded_version, version)
    if names then
        for name in pairs(names) do
            cache[name] = nil
        end
    else
        cache = {}
    end
    loaded_version = version
end

local function string_or_nil(v)
    if type(v) == "string" and v ~= "" then
        return v
    end
    return nil
end

local function string_or_empty(v)
    return type(v) == "string" and v or ""
end

-- compile turns a decoded route into the lookup NGINX's location matching
-- does: exact paths in a table, prefixes longest first, regexes in order.
local function compile(route)
    local c = { host = route.host, exact = {}, prefixes = {}, regexes = {} }
    for _, l in ipairs(route.locations) do
        local m = l.match
        if m == "=" then
            if c.exact[l.path] == nil then
                c.exact[l.path] = l
            end
        elseif m == "" or m == "^~" then
            c.prefixes[#c.prefixes + 1] = { path = l.path, len = #l.path, stop = m == "^~", loc = l }
        else
            c.regexes[#c.regexes + 1] = { re = l.path, flags = m == "~*" and "joi" or "jo", loc = l }
        end
        l.upstream = string_or_nil(l.upstream) or "-"
        l.canary_backend = string_or_nil(l.canary_backend)
        l.canary_ingress = string_or_nil(l.canary_ingress)
        l.fallback = string_or_nil(l.fallback)
        l.app_root = string_or_nil(l.app_root)
        l.x_forwarded_prefix = string_or_nil(l.x_forwarded_prefix)
        l.rewrite_regex = string_or_nil(l.rewrite_regex)
        l.upstream_vhost = string_or_nil(l.upstream_vhost)
        l.connection_header = string_or_nil(l.connection_header)
        if l.access then
            -- validate accepted the lines; should they fail anyway, the
            -- location denies everyone rather than no one.
            l.access = compile_access(l.access) or { rules = { { deny = true, all = true } }, v4 = true }
        end
        -- The metrics' labels of a proxied request (balancer.rewrite): the
        -- values rewrite() sets the location's variables to.
        if l.ingress_name then
            l.labels = tbl_concat({ string_or_empty(l.location_path), string_or_empty(l.namespace),
                                    string_or_empty(l.ingress_name), string_or_empty(l.service) }, "\1")
        else
            l.labels = "\1\1\1"
        end
        if l.connect_timeout or l.send_timeout or l.read_timeout then
            -- Seconds, as ngx.balancer.set_timeouts takes them; nil keeps
            -- the http block's.
            l.timeouts = { connect = l.connect_timeout, send = l.send_timeout, read = l.read_timeout }
        end
    end
    -- Longest first; equal lengths keep the renderer's order.
    for i, p in ipairs(c.prefixes) do
        p.order = i
    end
    tbl_sort(c.prefixes, function(a, b)
        if a.len ~= b.len then
            return a.len > b.len
        end
        return a.order < b.order
    end)
    return c
end

-- lookup returns the compiled route of host, or nil.
local function lookup(dict, host)
    local c = cache[host]
    if c ~= nil then
        return c
    end
    local json, err = store.read(dict, host)
    if not json then
        if json == nil then
            ngx_log(ERR, "switchyard: reading the route of ", host, ": ", err)
        end
        return nil
    end
    local route = json_decode(json)
    if type(route) ~= "table" or type(route.locations) ~= "table" then
        ngx_log(ERR, "switchyard: the stored route of ", host, " is not a route")
        return nil
    end
    c = compile(route)
    cache[host] = c
    return c
end

-- find returns the compiled route of a request's host: its own, else the
-- one-label wildcard of its parent ("*.example.com" for a.example.com,
-- never for a.b.example.com), as the renderer's wildcard server_name
-- matches; or nil.
local function find(dict, host)
    local c = lookup(dict, host)
    if c then
        return c
    end
    local dot = str_find(host, ".", 1, true)
    if dot then
        return lookup(dict, "*" .. str_sub(host, dot))
    end
    return nil
end

-- match is the location NGINX would choose for uri: an exact match; else
-- the longest prefix, unless it is protected ("^~") and a regex matches
-- first in order; else that prefix; else none.
local function match(c, uri)
    local l = c.exact[uri]
    if l then
        return l
    end
    local best
    local n = #uri
    for _, p in ipairs(c.prefixes) do
        if p.len <= n and str_sub(uri, 1, p.len) == p.path then
            best = p
            break
        end
    end
    if best and best.stop then
        return best.loc
    end
    for _, r in ipairs(c.regexes) do
        if ngx_re_find(uri, r.re, r.flags) then
            return r.loc
        end
    end
    return best and best.loc
end
_M.match = match
_M.compile = compile

-- Right after NGINX starts it listens before the applier has posted the
-- routes (it posts them, even none, to every new NGINX). A request in that
-- window waits for them (bounded), as balancer.lua waits for the backends,
-- instead of a 404 for a host that is about to be routed.
local FIRST_ROUTES_WAIT = 5 -- seconds
local FIRST_ROUTES_POLL = 0.01

local function wait_for_first_routes(dict)
    local deadline = ngx.now() + FIRST_ROUTES_WAIT
    while store.version(dict) == nil and ngx.now() < deadline do
        ngx.sleep(FIRST_ROUTES_POLL)
    end
end

-- rewrite_target does rewrite-target as a server block's location does
-- with "rewrite REGEX TARGET break" (the renderer routes only a TARGET
-- that is a path without "?"): when REGEX matches $uri, $uri becomes
-- TARGET with $1-$9 replaced by the captures, verbatim, and an unset or
-- missing group by nothing; the arguments stay. Binary: the captures are
-- of the decoded $uri, which may hold any byte, as NGINX copies them
-- (proxy_pass escapes the URI either way).
local function rewrite_target(regex, target)
    local m = ngx_re_match(ngx_var.uri, regex, "jo")
    if not m then
        return
    end
    local uri = str_gsub(target, "%$([1-9])", function(n)
        return m[tonumber(n)] or ""
    end)
    ngx_req.set_uri(uri, false, true)
end

-- too_large says whether a Content-Length of length is over limit (bytes,
-- nil or 0: none), logging it as NGINX does.
local function too_large(length, limit)
    if limit and limit > 0 and length and length > limit then
        ngx_log(ERR, "client intended to send too large body: ", length, " bytes")
        return true
    end
    return false
end

-- body_size is the size of the request body ngx.req.read_body read: in
-- memory, or in a temporary file; nil when that file cannot be read.
local function body_size()
    local data = ngx_req.get_body_data()
    if data then
        return #data
    end
    local path = ngx_req.get_body_file()
    if not path then
        return 0
    end
    local f = io_open(path, "rb")
    if not f then
        return nil
    end
    local size = f:seek("end")
    f:close()
    return size
end

-- check_read_body enforces a location's proxy-body-size (limit, bytes,
-- below the router location's client_max_body_size) on a body without
-- Content-Length (chunked, or HTTP/2): NGINX checks such a body while it
-- reads it, against the location's client_max_body_size, which here is
-- the shared one. So the body is read here (NGINX reads the whole body
-- before proxying anyway: the renderer routes such a location only with
-- request buffering on) and its size checked. Called last, where a
-- server block's proxy_pass would read it. A request without a body
-- reads nothing.
local function check_read_body(limit)
    ngx_req.read_body()
    local size = body_size()
    if not size then
        ngx_log(ERR, "switchyard: cannot measure the request body's temporary file")
        return ngx_exit(500)
    end
    if size > limit then
        ngx_log(ERR, "client intended to send too large chunked body: ", size, " bytes")
        return ngx_exit(413)
    end
end

-- server_rewrite_by_lua of the catch-all server: a request for a
-- Lua-routed host goes to @switchyard_router. Other hosts continue in the
-- catch-all's own locations. Runs before the server's rewrite directives,
-- so @switchyard_router sets what those would have.
function _M.dispatch()
    local dict = ngx.shared.switchyard_config
    if loaded_version == nil then
        wait_for_first_routes(dict)
    end
    sync(dict)
    if find(dict, ngx_var.host) then
        return ngx_exec("@switchyard_router")
    end
end

-- rewrite_by_lua of @switchyard_router: what a server block's location
-- sets and calls, from the route's location. max_body is proxy-body-size
-- in bytes (0: none): NGINX checks a request's Content-Length against
-- client_max_body_size when it chooses a location, which a named location
-- skips (a chunked body it still checks while reading it). A location's
-- lower body_limit is checked the same way, and on a body without
-- Content-Length by check_read_body.
function _M.rewrite(max_body)
    local dict = ngx.shared.switchyard_config
    local host = ngx_var.host
    local c = find(dict, host)
    if not c then
        -- Removed between dispatch and here (an internal redirect).
        return ngx_exit(404)
    end
    local length = tonumber(ngx_var.content_length)
    if too_large(length, max_body) then
        return ngx_exit(413)
    end
    local l = match(c, ngx_var.uri)
    if not l then
        return ngx_exit(404)
    end
    -- enable-cors: header_filter adds the headers to every answer from
    -- here on, as a server block's location filter does (redirects and
    -- errors included).
    if l.cors then
        ngx.ctx.switchyard_cors = l.cors
    end
    -- The location's own proxy-body-size, as NGINX checks it when it
    -- chooses the location: before anything the location does.
    if too_large(length, l.body_limit) then
        return ngx_exit(413)
    end
    ngx_var.proxy_upstream_name = l.upstream
    -- The metrics' host label: $server_name is the catch-all's "_".
    ngx.ctx.switchyard_host = c.host
    if l.ingress_name then
        ngx_var.namespace = l.namespace
        ngx_var.ingress_name = l.ingress_name
        ngx_var.service_name = l.service
        ngx_var.service_port = l.service_port
        ngx_var.location_path = l.location_path
    end
    if l.kind == "redirect" then
        -- permanent-redirect / temporal-redirect: the location's "return",
        -- before anything else it would do.
        return ngx_redirect(l.redirect_url, l.redirect_code)
    end
    if l.app_root and ngx_var.uri == "/" then
        -- app-root, as a server block's "return 302".
        return ngx.redirect(ngx_var.scheme .. "://" .. (ngx_var.http_host or "") .. l.app_root, 302)
    end
    if l.x_forwarded_prefix then
        ngx_var.switchyard_x_forwarded_prefix = l.x_forwarded_prefix
    end
    -- upstream-vhost and connection-proxy-header: what the location's
    -- "set" lines would have set, read by the http block's headers.
    if l.upstream_vhost then
        ngx_var.switchyard_upstream_vhost = l.upstream_vhost
    end
    if l.connection_header then
        ngx_var.switchyard_connection_header = l.connection_header
    end
    if l.rewrite_regex then
        rewrite_target(l.rewrite_regex, l.rewrite_target)
    end
    if l.cors then
        -- A preflight from an allowed origin is answered here, first in
        -- the location's rewrite_by_lua as in a server block.
        cors.rewrite(l.cors.origins)
    end
    -- The request's host, not the route's: a wildcard route's is "*.…".
    ingress.rewrite(l.ssl_redirect, l.force_ssl_redirect, l.preserve_trailing_slash, host)
    if l.kind ~= "proxy" then
        return ngx_exit(404)
    end
    balancer.rewrite(l.backend, l.canary_backend, l.canary_ingress, l.fallback, l.tag_service, l.timeouts, l.labels, c.host)
    -- The source ranges: a server block's allow and deny run in the access
    -- phase, after everything above (its rewrite phase), before the body
    -- is read.
    if l.access then
        check_access(l.access)
    end
    if l.body_limit and not length then
        check_read_body(l.body_limit)
    end
end

-- header_filter_by_lua of @switchyard_router: the CORS headers of the
-- routed location, then what the http block's filter does.
function _M.header_filter()
    local c = ngx.ctx.switchyard_cors
    if c then
        cors.header_filter(c.origins, c.methods, c.headers, c.expose_headers, c.credentials, c.max_age)
    end
    return balancer.header_filter()
end

-- CORS values as features.CORS* patterns accept them (origins: "*", or
-- space-separated scheme://host[:port] with an optional "*." label); they
-- become response headers, so nothing else may get through.
local CORS_ORIGIN = [[^https?://(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:[0-9]{1,5})?$]]
local CORS_METHODS = [[^([A-Za-z]+,?[ \t]?)+$]]
local CORS_HEADERS = [[^([A-Za-z0-9_-]+,?[ \t]?)+$]]
local CORS_EXPOSE = [[^(([A-Za-z0-9_-]+|\*),?[ \t]?)+$]]
local MAX_CORS_VALUE = 1000
local MAX_CORS_MAX_AGE = 365 * 24 * 3600

local function cors_value(v, pattern, optional)
    if type(v) ~= "string" or #v > MAX_CORS_VALUE then
        return false
    end
    if v == "" then
        return optional
    end
    return ngx_re_find(v, pattern, "jo") ~= nil
end

-- validate_cors returns an error for a route location's cors, or nil.
local function validate_cors(c)
    if type(c) ~= "table" or type(c.origins) ~= "string" or #c.origins > 100 * 300 then
        return "cors needs origins"
    end
    if c.origins ~= "*" then
        for origin in string.gmatch(c.origins, "[^ ]+") do
            if not ngx_re_find(origin, CORS_ORIGIN, "jo") then
                return "cors origin " .. origin .. " is not scheme://host[:port]"
            end
        end
    end
    if not cors_value(c.methods, CORS_METHODS, false) or not cors_value(c.headers, CORS_HEADERS, false)
            or not cors_value(c.expose_headers, CORS_EXPOSE, true) then
        return "cors methods, headers or expose_headers are not header tokens"
    end
    if type(c.credentials) ~= "boolean" or not is_whole(c.max_age, 0, MAX_CORS_MAX_AGE) then
        return "cors needs credentials (true or false) and max_age (0 to a year)"
    end
    return nil
end

-- validate checks one posted route; returns an error or nil. A route that
-- passes cannot make rewrite() fail on a type.
function _M.validate(route)
    if type(route) ~= "table" then
        return "a route must be an object"
    end
    local host = route.host
    if type(host) ~= "string" or not ngx.re.find(host, [[^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$]], "jo") then
        return "route host must be a lower-case host name, or one with a leading *."
    end
    if type(route.locations) ~= "table" or #route.locations == 0 then
        return "route " .. host .. ": locations must be a non-empty array"
    end
    for i, l in ipairs(route.locations) do
        local where = "route " .. host .. " location " .. i
        if type(l) ~= "table" or not MATCHES[l.match] or type(l.path) ~= "string" or l.path == "" then
            return where .. ": needs match (=, ^~, \"\", ~*, ~) and a path"
        end
        if not KINDS[l.kind] then
            return where .. ": kind must be proxy, not-found or redirect"
        end
        if l.kind == "proxy" and (type(l.backend) ~= "string" or l.backend == "") then
            return where .. ": a proxy location needs a backend"
        end
        if l.kind == "redirect" and (not REDIRECT_CODES[l.redirect_code] or type(l.redirect_url) ~= "string"
                or #l.redirect_url > 2048 or not ngx_re_find(l.redirect_url, REDIRECT_URL, "jo")) then
            return where .. ": a redirect location needs a redirect_code (301, 302, 303, 307, 308) and an http(s) redirect_url"
        end
        if (l.match == "~" or l.match == "~*") then
            local _, _, err = ngx_re_find("", l.path, "jo")
            if err then
                return where .. ": invalid regex: " .. err
            end
        end
        for _, f in ipairs({ "upstream", "backend", "canary_backend", "canary_ingress", "fallback", "namespace",
                             "ingress_name", "service", "service_port", "location_path", "app_root",
                             "x_forwarded_prefix", "upstream_vhost", "connection_header" }) do
            if l[f] ~= nil and type(l[f]) ~= "string" then
                return where .. ": " .. f .. " must be a string"
            end
        end
        if l.rewrite_regex ~= nil then
            if type(l.rewrite_regex) ~= "string" or str_sub(l.rewrite_regex, 1, 5) ~= "(?i)^" then
                return where .. ": rewrite_regex must be an anchored regex"
            end
            local _, _, err = ngx_re_find("", l.rewrite_regex, "jo")
            if err then
                return where .. ": invalid rewrite_regex: " .. err
            end
            if type(l.rewrite_target) ~= "string" or not ngx_re_find(l.rewrite_target, REWRITE_TARGET, "jo") then
                return where .. ": rewrite_target must be a path without ? whose only $ are $1-$9"
            end
        elseif l.rewrite_target ~= nil then
            return where .. ": rewrite_target without rewrite_regex"
        end
        if l.cors ~= nil then
            local err = validate_cors(l.cors)
            if err then
                return where .. ": " .. err
            end
        end
        if l.access ~= nil then
            if type(l.access) ~= "table" or #l.access == 0 then
                return where .. ": access must be a non-empty array of lines"
            end
            local _, err = compile_access(l.access)
            if err then
                return where .. ": " .. err
            end
        end
        if l.body_limit ~= nil and not is_whole(l.body_limit, 1, MAX_BODY_LIMIT) then
            return where .. ": body_limit must be a positive whole number of bytes"
        end
        for _, f in ipairs({ "connect_timeout", "send_timeout", "read_timeout" }) do
            if l[f] ~= nil and not is_whole(l[f], 1, MAX_TIMEOUT) then
                return where .. ": " .. f .. " must be whole seconds from 1 to " .. MAX_TIMEOUT
            end
        end
        if l.upstream_vhost ~= nil and not ngx_re_find(l.upstream_vhost, UPSTREAM_VHOST, "jo") then
            return where .. ": upstream_vhost must be a host name with an optional port"
        end
        if l.connection_header ~= nil and not ngx_re_find(l.connection_header, CONNECTION_HEADER, "jo") then
            return where .. ": connection_header must be a list of tokens"
        end
        for _, f in ipairs({ "ssl_redirect", "force_ssl_redirect", "preserve_trailing_slash", "tag_service" }) do
            if l[f] ~= nil and type(l[f]) ~= "boolean" then
                return where .. ": " .. f .. " must be true or false"
            end
        end
    end
    return nil
end

return _M
