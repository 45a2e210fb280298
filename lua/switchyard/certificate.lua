-- Certificate selection by SNI, for ssl_certificate_by_lua_block.
--
-- The controller publishes certificates into the switchyard_certs shared dict
-- (see switchyard.configuration): one PEM (chain + key) per certificate id and
-- a map hostname -> id. A handshake reads the version, the map (decoded once
-- per version per worker) and, on a cache miss, only the PEM it needs.
--
-- Whenever this module cannot serve a configured certificate it leaves the
-- connection alone, so nginx serves the server's ssl_certificate (the
-- default). PEM data is secret and is never logged.

local ffi = require("ffi")
local ssl = require("ngx.ssl")
local ocsp = require("ngx.ocsp")
local lrucache = require("resty.lrucache")
local cjson = require("cjson.safe")
local snapshot = require("switchyard.util.snapshot")

local ngx = ngx
local ngx_log = ngx.log
local ERR = ngx.ERR
local ngx_shared = ngx.shared
local server_name = ssl.server_name
local parse_pem_cert = ssl.parse_pem_cert
local parse_pem_priv_key = ssl.parse_pem_priv_key
local clear_certs = ssl.clear_certs
local set_cert = ssl.set_cert
local set_priv_key = ssl.set_priv_key
local set_ocsp_status_resp = ocsp.set_ocsp_status_resp
local ngx_time = ngx.time
local tonumber = tonumber
local json_decode = cjson.decode
local type = type
local pcall = pcall
local tostring = tostring
local str_lower = string.lower
local str_find = string.find
local str_sub = string.sub
local str_byte = string.byte
local pairs = pairs
local STAR = str_byte("*")

local _M = {}

local KIND = "certificates"
local VERSION_KEY = snapshot.version_key(KIND)
-- Parsed certificates per worker. Keys include the version, so a new
-- snapshot is never served from stale entries; old ones age out.
local CACHE_SIZE = 2000

local cache = assert(lrucache.new(CACHE_SIZE))

-- Hostname map of the version `servers_version`, decoded once per version,
-- and whether it has any wildcard name: without one, a miss needs no
-- suffix string (ingress.rewrite asks for every request).
local servers = {}
local servers_version
local servers_wildcard = false

-- set_priv_key fails on a key that does not match the certificate, and by
-- then clear_certs has removed the default certificate, so the handshake would
-- fail. Checking the pair while parsing keeps the fallback to the default.
-- Uses OpenSSL directly (nginx links it dynamically); without the symbols the
-- check is skipped.
local key_matches
do
    local ok = pcall(ffi.cdef, [[
        void *OPENSSL_sk_value(const void *stack, int index);
        int X509_check_private_key(const void *cert, const void *key);
        void ERR_clear_error(void);
    ]])
    local C = ffi.C
    ok = ok and pcall(function()
        return C.OPENSSL_sk_value and C.X509_check_private_key and C.ERR_clear_error
    end)
    if ok then
        key_matches = function(chain, key)
            local leaf = C.OPENSSL_sk_value(chain, 0)
            if leaf == nil then
                return false
            end
            if C.X509_check_private_key(leaf, key) == 1 then
                return true
            end
            -- do not leave the mismatch in OpenSSL's error queue, where
            -- nginx would later report it for an unrelated operation
            C.ERR_clear_error()
            return false
        end
    else
        key_matches = function()
            return true
        end
    end
end

local function load_servers(dict, version)
    if version == servers_version then
        return servers
    end
    local data = dict:get(snapshot.key(KIND, version, "servers"))
    local map, err = json_decode(data or "")
    if type(map) ~= "table" then
        -- Not cached: this happens only if the snapshot was replaced twice
        -- between reading the version and the map, and is retried next time.
        return nil, "cannot read hostname map of version " .. version .. ": " .. tostring(err)
    end
    local wildcard = false
    for name in pairs(map) do
        if type(name) == "string" and str_byte(name, 1) == STAR then
            wildcard = true
            break
        end
    end
    servers, servers_version, servers_wildcard = map, version, wildcard
    return servers
end

-- Exact hostname first, then a wildcard for exactly one leading label:
-- a.example.com matches *.example.com, a.b.example.com does not.
local function lookup(map, host)
    local id = map[host]
    if id then
        return id
    end
    if not servers_wildcard and map == servers then
        return nil
    end
    local dot = str_find(host, ".", 1, true)
    if dot and dot > 1 then
        return map["*" .. str_sub(host, dot)]
    end
    return nil
end

local function parse(pem, id)
    local chain, err = parse_pem_cert(pem)
    if not chain then
        return nil, "cannot parse certificate of " .. id .. ": " .. tostring(err)
    end
    local key
    key, err = parse_pem_priv_key(pem)
    if not key then
        return nil, "cannot parse private key of " .. id .. ": " .. tostring(err)
    end
    if not key_matches(chain, key) then
        return nil, "private key of " .. id .. " does not match its certificate"
    end
    return { chain = chain, key = key }
end

-- staple reads the OCSP response published with certificate id
-- (enable-ocsp): the DER and the Unix time it expires, or nil.
local function staple(dict, id, version)
    local value = dict:get(snapshot.key(KIND, version, "ocsp:" .. id))
    if not value then
        return nil
    end
    local colon = str_find(value, ":", 1, true)
    local expires = colon and tonumber(str_sub(value, 1, colon - 1))
    if not expires then
        return nil
    end
    return str_sub(value, colon + 1), expires
end

-- Parsed {chain, key, staple, staple_expires} for certificate id of version, from the cache or the
-- shared dict. Failures are not cached, so a fixed certificate is picked up
-- and a broken one keeps being reported.
local function certificate(dict, id, version)
    local cache_key = id .. "\0" .. version
    local parsed = cache:get(cache_key)
    if parsed then
        return parsed
    end
    local pem = dict:get(snapshot.key(KIND, version, "pem:" .. id))
    if not pem then
        return nil, "certificate " .. id .. " is missing in version " .. version
    end
    local err
    parsed, err = parse(pem, id)
    if not parsed then
        return nil, err
    end
    parsed.staple, parsed.staple_expires = staple(dict, id, version)
    cache:set(cache_key, parsed)
    return parsed
end

-- default_id is the --default-ssl-certificate's id in version, or nil:
-- NGINX's own default certificate is served then.
local function default_id(dict, version)
    local id = dict:get(snapshot.key(KIND, version, "default"))
    if id == nil or id == "" then
        return nil
    end
    return id
end

local function select_certificate()
    local name, err = server_name()
    if not name and err then
        return nil, "cannot read SNI: " .. err
    end

    local dict = ngx_shared.switchyard_certs
    local version = snapshot.read_version(dict, VERSION_KEY)
    if not version then
        return nil -- nothing published yet
    end
    local id, host
    if name then
        local map
        map, err = load_servers(dict, version)
        if not map then
            return nil, err
        end
        host = str_lower(name)
        id = lookup(map, host)
    end
    if not id then
        -- No SNI, or a name no certificate covers.
        id = default_id(dict, version)
        if not id then
            return nil
        end
        host = host or "clients without SNI"
    end

    local parsed
    parsed, err = certificate(dict, id, version)
    if not parsed then
        return nil, err .. " (for " .. host .. ")"
    end

    -- Only now, with a usable pair in hand, drop the default certificate.
    local ok
    ok, err = clear_certs()
    if not ok then
        return nil, "cannot clear the default certificate: " .. tostring(err)
    end
    ok, err = set_cert(parsed.chain)
    if not ok then
        return nil, "cannot set certificate " .. id .. ": " .. tostring(err)
    end
    ok, err = set_priv_key(parsed.key)
    if not ok then
        return nil, "cannot set private key of " .. id .. ": " .. tostring(err)
    end
    -- The controller fetched the response (stages/applier/ocsp.go): an
    -- expired or missing one means no staple, never a failed handshake.
    if parsed.staple and ngx_time() < parsed.staple_expires then
        ok, err = set_ocsp_status_resp(parsed.staple)
        if not ok then
            ngx_log(ERR, "switchyard: cannot staple the OCSP response of ", id, ": ", tostring(err))
        end
    end
    return true
end

-- configured_for says whether a certificate is published for host (exact
-- or one-label wildcard). ssl-redirect and HSTS apply to such hosts only,
-- so adding TLS to a host needs no reload. One shared dict read when
-- nothing changed.
function _M.configured_for(host)
    if not host then
        return false
    end
    return _M.configured_for_lower(str_lower(host))
end

-- configured_for for a host that is already lower case, as NGINX's $host
-- always is: the per-request path of ingress.rewrite. O(1): one shared dict
-- read (a number) and one table lookup, allocation-free unless a wildcard
-- certificate is published.
function _M.configured_for_lower(host)
    if not host then
        return false
    end
    local dict = ngx_shared.switchyard_certs
    local version = snapshot.read_version(dict, VERSION_KEY)
    if not version then
        return false
    end
    local map = load_servers(dict, version)
    return map ~= nil and lookup(map, host) ~= nil
end

function _M.call()
    -- pcall: a Lua error would abort the handshake instead of falling back
    local pok, ok, err = pcall(select_certificate)
    if not pok then
        ngx_log(ERR, "switchyard: selecting a certificate failed: ", ok)
    elseif not ok and err then
        ngx_log(ERR, "switchyard: ", err)
    end
end

return _M
