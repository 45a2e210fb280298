-- Configuration endpoint of the data plane.
--
-- Served by content_by_lua_block in a server that listens only on a unix
-- socket, so proxied traffic can never reach it. A POST of certificates is a
-- full replacement that is validated, then published as a new snapshot (see
-- switchyard.util.snapshot); workers pick it up by its version. Backends are
-- stored one key each (switchyard.util.backend_store): a POST to
-- /configuration/backends replaces them all, one to
-- /configuration/backends/delta only the ones it names, on top of the
-- version it says it applies to (412 when that is not the stored one).

local cjson = require("cjson.safe")
local snapshot = require("switchyard.util.snapshot")
local backend_store = require("switchyard.util.backend_store")
local router = require("switchyard.router")

local ngx = ngx
local ngx_log = ngx.log
local ERR = ngx.ERR
local ngx_print = ngx.print
local ngx_exit = ngx.exit
local ngx_var = ngx.var
local req_read_body = ngx.req.read_body
local req_get_body_data = ngx.req.get_body_data
local req_get_body_file = ngx.req.get_body_file
local req_get_method = ngx.req.get_method
local io_open = io.open
local type = type
local pairs = pairs
local ipairs = ipairs
local next = next
local tonumber = tonumber
local tostring = tostring
local str_find = string.find
local str_lower = string.lower
local decode_base64 = ngx.decode_base64
local tbl_sort = table.sort
local tbl_concat = table.concat
local json_decode = cjson.decode
local json_encode = cjson.encode

local _M = {}

local function respond(status, text, content_type)
    ngx.status = status
    ngx.header["Content-Type"] = content_type or "text/plain; charset=utf-8"
    -- The sizes of the dicts this worker writes to: after a reload that
    -- resized them, the applier pushes again until a new worker (with the
    -- new, empty dicts) has taken the payload.
    ngx.header["X-Switchyard-Dicts"] = ngx.shared.switchyard_config:capacity() .. ","
        .. ngx.shared.switchyard_certs:capacity()
    if text then
        ngx_print(text)
    end
    -- the status and body are already set; ngx.OK just ends the handler
    return ngx_exit(ngx.OK)
end

-- Returns the request body as a string. Bodies larger than
-- client_body_buffer_size are spilled by nginx to a temp file, and a
-- backends list can be several MB.
local function read_body()
    req_read_body()
    local data = req_get_body_data()
    if data then
        return data
    end

    local path = req_get_body_file()
    if not path then
        return nil, "empty body"
    end
    local file, err = io_open(path, "rb")
    if not file then
        return nil, "cannot open body file: " .. tostring(err)
    end
    data = file:read("*a")
    file:close()
    if not data or data == "" then
        return nil, "empty body"
    end
    return data
end

-- cjson decodes both [] and {} to an empty table, and has no array marker in
-- this build, so a table is an array when its keys are exactly 1..n.
local function is_array(value)
    if type(value) ~= "table" then
        return false
    end
    local count = 0
    for _ in pairs(value) do
        count = count + 1
    end
    for i = 1, count do
        if value[i] == nil then
            return false
        end
    end
    return true
end

-- A JSON object, or {} which cjson cannot tell from [].
local function is_object(value)
    return type(value) == "table" and (next(value) == nil or not is_array(value))
end

local function valid_port(port)
    if type(port) ~= "string" or not str_find(port, "^%d+$") then
        return false
    end
    local n = tonumber(port)
    return n >= 1 and n <= 65535
end

local function validate_endpoints(endpoints, name)
    if not is_array(endpoints) then
        return "backend " .. name .. ": endpoints must be an array"
    end
    for i, endpoint in ipairs(endpoints) do
        if type(endpoint) ~= "table" then
            return "backend " .. name .. ": endpoint " .. i .. " must be an object"
        end
        if type(endpoint.address) ~= "string" or endpoint.address == "" then
            return "backend " .. name .. ": endpoint " .. i .. " needs a string address"
        end
        if not valid_port(endpoint.port) then
            return "backend " .. name .. ": endpoint " .. i
                .. " needs a string port between 1 and 65535"
        end
    end
end

local function optional_string(value)
    return value == nil or type(value) == "string"
end

-- Canary fields, in ingress-nginx's shape: alternativeBackends lists
-- backend names, trafficShapingPolicy is the canary's policy.
local function validate_canary(backend, name)
    local alternatives = backend.alternativeBackends
    if alternatives ~= nil then
        if not is_array(alternatives) then
            return "backend " .. name .. ": alternativeBackends must be an array"
        end
        for _, alt in ipairs(alternatives) do
            if type(alt) ~= "string" or alt == "" then
                return "backend " .. name .. ": alternativeBackends must hold backend names"
            end
        end
    end
    local policy = backend.trafficShapingPolicy
    if policy == nil then
        return nil
    end
    if not is_object(policy) then
        return "backend " .. name .. ": trafficShapingPolicy must be an object"
    end
    local weight, total = policy.weight, policy.weightTotal
    if type(weight) ~= "number" or weight < 0 or weight % 1 ~= 0 then
        return "backend " .. name .. ": trafficShapingPolicy.weight must be a whole number >= 0"
    end
    if total ~= nil and (type(total) ~= "number" or total < 1 or total % 1 ~= 0) then
        return "backend " .. name .. ": trafficShapingPolicy.weightTotal must be a whole number >= 1"
    end
    for _, field in ipairs({ "header", "headerValue", "headerPattern", "cookie" }) do
        if not optional_string(policy[field]) then
            return "backend " .. name .. ": trafficShapingPolicy." .. field .. " must be a string"
        end
    end
end

local function validate_backends(backends)
    if not is_array(backends) then
        return "body must be a JSON array of backends"
    end
    local seen = {}
    for i, backend in ipairs(backends) do
        if not is_object(backend) then
            return "backend " .. i .. " must be an object"
        end
        local name = backend.name
        if type(name) ~= "string" or name == "" then
            return "backend " .. i .. " needs a string name"
        end
        if seen[name] then
            return "duplicate backend name " .. name
        end
        seen[name] = true
        local lb = backend["load-balance"]
        if lb ~= nil and type(lb) ~= "string" then
            return "backend " .. name .. ": load-balance must be a string"
        end
        local err = validate_endpoints(backend.endpoints, name)
            or validate_canary(backend, name)
        if err then
            return err
        end
    end
end

local function validate_routes(routes)
    if not is_array(routes) then
        return "body must be a JSON array of routes"
    end
    local seen = {}
    for i, route in ipairs(routes) do
        if not is_object(route) then
            return "route " .. i .. " must be an object"
        end
        local err = router.validate(route)
        if err then
            return err
        end
        if seen[route.host] then
            return "duplicate route host " .. route.host
        end
        seen[route.host] = true
    end
end

-- Maps a publish error to a response: a full dict is reported as 507 so the
-- controller knows the configuration was NOT applied.
local function publish_failed(kind, err)
    if err == snapshot.ERR_BUSY then
        return respond(409, "another " .. kind .. " update is in progress, retry\n")
    end
    ngx_log(ERR, "switchyard: storing ", kind, " failed: ", err)
    if err == "no memory" then
        return respond(507, "shared dict is full, " .. kind .. " not applied\n")
    end
    return respond(500, "storing " .. kind .. " failed: " .. tostring(err) .. "\n")
end

-- Reads the body and decodes it, requiring it to start with open (cjson
-- cannot tell [] from {}, the first character can). Returns the value, or
-- nil after answering 400 (or 507 for a body larger than dict).
local function read_json(open, shape, dict)
    local body, err = read_body()
    if not body then
        respond(400, err .. "\n")
        return nil
    end
    -- Backends stored take at least the bytes they were sent in: a body
    -- larger than the whole dict cannot fit, and is refused before the
    -- work of decoding it.
    if dict and #body > dict:capacity() then
        respond(507, "shared dict is full, backends not applied\n")
        return nil
    end
    if not str_find(body, "^%s*%" .. open) then
        respond(400, "body must be a JSON " .. shape .. "\n")
        return nil
    end
    local value, derr = json_decode(body)
    if value == nil then
        respond(400, "invalid JSON: " .. tostring(derr) .. "\n")
        return nil
    end
    return value
end

-- The kinds of named values stored one key each (util/backend_store.lua):
-- the backends, by name, and the routes of Lua-routed hosts
-- (switchyard.router), by host. Each has a full and a delta endpoint.
local named_kinds = {
    backends = {
        store = backend_store, field = "backends", item = "backend", key = "name",
        header = "X-Switchyard-Backends-Version", validate = validate_backends,
    },
    routes = {
        store = router.store, field = "routes", item = "route", key = "host",
        header = "X-Switchyard-Routes-Version", validate = validate_routes,
    },
}

-- Each value's JSON by its key, for the store.
local function by_key(kind, values)
    local set = {}
    for _, value in ipairs(values) do
        set[value[kind.key]] = json_encode(value)
    end
    return set
end

local function published(kind, version, err, stored)
    if not version then
        if err == kind.store.ERR_STALE then
            -- The applier's idea of the stored values is not what is
            -- stored: it must send them all.
            ngx.header[kind.header] = tostring(stored)
            return respond(412, "stale delta: the stored " .. kind.field .. " are version " .. tostring(stored)
                .. ", send them all\n")
        end
        return publish_failed(kind.field, err)
    end
    ngx.header[kind.header] = tostring(version)
    return respond(201, kind.field .. " version " .. version .. "\n")
end

-- POST /configuration/<kind>: every value there is.
local function post_full(kind)
    local values = read_json("[", "array of " .. kind.field, ngx.shared.switchyard_config)
    if values == nil then
        return
    end
    local verr = kind.validate(values)
    if verr then
        return respond(400, verr .. "\n")
    end
    return published(kind, kind.store.publish_full(ngx.shared.switchyard_config, by_key(kind, values)))
end

-- A delta: {"base": <version it applies to>, "<kind>": [added or changed
-- values], "removed": [keys]}. Refused as a whole when any part is
-- malformed.
local function validate_delta(kind, delta)
    if not is_object(delta) then
        return "body must be a JSON object"
    end
    local base = delta.base
    if type(base) ~= "number" or base < 1 or base % 1 ~= 0 then
        return "base must be a whole number >= 1"
    end
    local values = delta[kind.field]
    if values == nil then
        delta[kind.field] = {}
    else
        local err = kind.validate(values)
        if err then
            return err
        end
    end
    local removed = delta.removed
    if removed == nil then
        delta.removed = {}
        return nil
    end
    if not is_array(removed) then
        return "removed must be an array of " .. kind.item .. " " .. kind.key .. "s"
    end
    local changed = {}
    for _, value in ipairs(delta[kind.field]) do
        changed[value[kind.key]] = true
    end
    for _, key in ipairs(removed) do
        if type(key) ~= "string" or key == "" then
            return "removed must be an array of " .. kind.item .. " " .. kind.key .. "s"
        end
        if changed[key] then
            return kind.item .. " " .. key .. " is both changed and removed"
        end
        changed[key] = true
    end
end

-- POST /configuration/<kind>/delta: only the values that changed.
local function post_delta(kind)
    local delta = read_json("{", "object", ngx.shared.switchyard_config)
    if delta == nil then
        return
    end
    local verr = validate_delta(kind, delta)
    if verr then
        return respond(400, verr .. "\n")
    end
    local removed = {}
    for _, key in ipairs(delta.removed) do
        removed[key] = true
    end
    return published(kind, kind.store.publish_delta(ngx.shared.switchyard_config, delta.base,
                                                    by_key(kind, delta[kind.field]), removed))
end

local function get_all(kind)
    local data, err = kind.store.dump(ngx.shared.switchyard_config)
    if not data then
        return publish_failed(kind.field, err == kind.store.ERR_RACING and snapshot.ERR_BUSY or err)
    end
    return respond(200, data, "application/json")
end

-- validate_staples checks the OCSP responses (enable-ocsp) and decodes
-- them in place: config.ocsp[id] becomes { der = ..., expires = ... }.
local function validate_staples(config, certificates)
    local staples = config.ocsp
    if staples == nil then
        return nil
    end
    if not is_object(staples) then
        return "ocsp must be an object"
    end
    for id, staple in pairs(staples) do
        if type(id) ~= "string" or certificates[id] == nil then
            return "an OCSP response references an unknown certificate"
        end
        if not is_object(staple) or type(staple.response) ~= "string" or type(staple.expires) ~= "number" then
            return "the OCSP response of " .. id .. " must be {response, expires}"
        end
        local der = decode_base64(staple.response)
        if not der or der == "" then
            return "the OCSP response of " .. id .. " is not base64"
        end
        staples[id] = { der = der, expires = staple.expires }
    end
end

local function validate_certificates(config)
    if not is_object(config) then
        return "body must be a JSON object"
    end
    local certificates = config.certificates
    if certificates == nil then
        certificates = {}
    elseif not is_object(certificates) then
        return "certificates must be an object"
    end
    for id, pem in pairs(certificates) do
        if type(id) ~= "string" or id == "" then
            return "certificate ids must be non-empty strings"
        end
        if type(pem) ~= "string" or pem == "" then
            return "certificate " .. id .. " must be a PEM string"
        end
    end

    local servers = config.servers
    if servers == nil then
        servers = {}
    elseif not is_object(servers) then
        return "servers must be an object"
    end
    for host, id in pairs(servers) do
        if type(host) ~= "string" or host == "" then
            return "server names must be non-empty strings"
        end
        if type(id) ~= "string" or certificates[id] == nil then
            return "server " .. host .. " references an unknown certificate"
        end
    end
    local default = config.default
    if default ~= nil and (type(default) ~= "string" or certificates[default] == nil) then
        return "default references an unknown certificate"
    end
    return validate_staples(config, certificates)
end

-- Builds the snapshot parts: one key per PEM, so a handshake reads only the
-- certificate it serves, plus the hostname map. Hostnames are lowercased
-- because certificate.lua looks up the lowercased SNI.
local function certificate_parts(config)
    local parts = {}
    for id, pem in pairs(config.certificates or {}) do
        parts["pem:" .. id] = pem
    end
    -- "<expires>:<DER>", read by certificate.lua with the PEM.
    for id, staple in pairs(config.ocsp or {}) do
        parts["ocsp:" .. id] = staple.expires .. ":" .. staple.der
    end
    local servers = {}
    for host, id in pairs(config.servers or {}) do
        servers[str_lower(host)] = id
    end
    parts.servers = json_encode(servers)
    -- The id served for a name no certificate covers (--default-ssl-certificate).
    parts.default = config.default or ""
    return parts
end

local function post_certificates()
    local config = read_json("{", "object")
    if config == nil then
        return
    end
    local verr = validate_certificates(config)
    if verr then
        return respond(400, verr .. "\n")
    end

    local version, perr = snapshot.publish(ngx.shared.switchyard_certs, "certificates",
                                           certificate_parts(config))
    if not version then
        return publish_failed("certificates", perr)
    end
    return respond(201, "certificates version " .. version .. "\n")
end

local routes = {
    ["/configuration/backends"] = {
        GET = function() return get_all(named_kinds.backends) end,
        POST = function() return post_full(named_kinds.backends) end,
    },
    ["/configuration/backends/delta"] = { POST = function() return post_delta(named_kinds.backends) end },
    ["/configuration/routes"] = {
        GET = function() return get_all(named_kinds.routes) end,
        POST = function() return post_full(named_kinds.routes) end,
    },
    ["/configuration/routes/delta"] = { POST = function() return post_delta(named_kinds.routes) end },
    ["/configuration/certificates"] = { POST = post_certificates },
    ["/healthz"] = { GET = function() return respond(200, "ok") end },
    -- The per-request metrics, read by the controller on scrape.
    ["/metrics"] = { GET = function() return require("switchyard.metrics").serve() end },
    -- The request spans, drained by the controller, which exports them.
    ["/traces"] = { POST = function() return require("switchyard.tracing").drain() end },
}

function _M.call()
    local route = routes[ngx_var.uri]
    if not route then
        return respond(404, "not found\n")
    end
    local method = req_get_method()
    local handler = route[method] or (method == "HEAD" and route.GET)
    if not handler then
        local allowed = {}
        for m in pairs(route) do
            allowed[#allowed + 1] = m
        end
        tbl_sort(allowed)
        ngx.header["Allow"] = tbl_concat(allowed, ", ")
        return respond(405, "method not allowed\n")
    end
    return handler()
end

return _M
