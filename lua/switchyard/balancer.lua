-- Per-worker backend registry and upstream balancer.
--
-- The controller publishes the backends into the switchyard_config shared
-- dict, one key per backend (see switchyard.util.backend_store). Each worker
-- keeps a balancer instance per backend, and rebuilds the ones a new
-- version changed when the published version changes: from a timer, so
-- idle workers stay current, and at the start of every proxied request, so
-- a worker never serves a request with configuration older than the last
-- successful POST. The others keep their instances and state.

local cjson = require("cjson.safe")
local ngx_balancer = require("ngx.balancer")
local backend_store = require("switchyard.util.backend_store")

local ngx = ngx
local ngx_log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local NOTICE = ngx.NOTICE
local INFO = ngx.INFO
local ngx_exit = ngx.exit
local ngx_var = ngx.var
local ngx_shared = ngx.shared
local set_current_peer = ngx_balancer.set_current_peer
local set_more_tries = ngx_balancer.set_more_tries
local set_timeouts = ngx_balancer.set_timeouts
local get_last_failure = ngx_balancer.get_last_failure
local json_decode = cjson.decode
local ngx_re_match = ngx.re.match
local math_random = math.random
local math_floor = math.floor
local str_lower = string.lower
local str_gsub = string.gsub
local type = type
local pairs = pairs
local ipairs = ipairs
local tonumber = tonumber
local tostring = tostring
local pcall = pcall

local _M = {}

local SYNC_INTERVAL = 0.1 -- seconds
local DEFAULT_ALGORITHM = "round_robin"

-- Balancer implementations by the backend's "load-balance" value. New ones
-- (ewma, chash, sticky) implement the interface described in
-- switchyard.balancers.round_robin and are registered here.
local algorithms = {
    round_robin = require("switchyard.balancers.round_robin"),
    ewma = require("switchyard.balancers.ewma"),
    chash = require("switchyard.balancers.chash"),
    chashsubset = require("switchyard.balancers.chashsubset"),
    sticky_balanced = require("switchyard.affinity.balanced"),
    sticky_persistent = require("switchyard.affinity.persistent"),
}

-- name -> balancer instance, built on a request's first use of the backend
-- (load, the cache's __index), not for every published backend: a worker
-- at 10,000 Ingresses decoded and built all 10,000 at start and held them
-- all, though most are never asked for. instance.algorithm records which
-- implementation built it, so a change of load-balance replaces the
-- instance. Set by new_cache below.
local backends
-- Version loaded into `backends`; nil until something was published.
local loaded_version
-- Whether any loaded backend has a header_filter or log hook. Every
-- response runs those phases (they are set at http level); when no backend
-- needs them, which is the common case (round robin, chash), they return
-- before touching ngx.ctx. A request whose backend was replaced by a sync
-- in between may skip its hook: the instance it would feed is gone anyway.
local any_header_filter = false
local any_log = false

-- As in ingress-nginx, cookie affinity wins over upstream-hash-by, which
-- wins over load-balance.
local function algorithm_for(backend)
    local affinity = backend.sessionAffinityConfig
    if type(affinity) == "table" and affinity.name == "cookie" then
        return affinity.mode == "persistent" and "sticky_persistent" or "sticky_balanced"
    end
    local hash = backend.upstreamHashByConfig
    if type(hash) == "table" and type(hash["upstream-hash-by"]) == "string" and hash["upstream-hash-by"] ~= "" then
        return hash["upstream-hash-by-subset"] == true and "chashsubset" or "chash"
    end
    local name = backend["load-balance"]
    if name == nil or name == "" then
        return DEFAULT_ALGORITHM
    end
    if not algorithms[name] then
        ngx_log(WARN, "switchyard: backend ", backend.name, " asks for unknown load-balance \"",
                tostring(name), "\", using ", DEFAULT_ALGORITHM)
        return DEFAULT_ALGORITHM
    end
    return name
end

-- Converts ports to numbers once per configuration change instead of per
-- request. Entries the configuration endpoint would have rejected are skipped.
local function prepare_endpoints(backend)
    local endpoints = {}
    if type(backend.endpoints) ~= "table" then
        return endpoints
    end
    for _, endpoint in ipairs(backend.endpoints) do
        local port = type(endpoint) == "table" and tonumber(endpoint.port)
        if port and type(endpoint.address) == "string" then
            endpoints[#endpoints + 1] = { address = endpoint.address, port = port }
        end
    end
    return endpoints
end

local function nonempty(value)
    if type(value) == "string" and value ~= "" then
        return value
    end
    return nil
end

-- Prepares a canary backend's trafficShapingPolicy once per configuration
-- change: the variable names to read and the numbers, so a request only
-- reads variables and compares.
local function prepare_policy(policy)
    if type(policy) ~= "table" then
        return nil
    end
    local total = tonumber(policy.weightTotal)
    if not total or total < 1 then
        total = 100
    end
    local prepared = {
        weight = tonumber(policy.weight) or 0,
        weight_total = math_floor(total),
    }
    local header = nonempty(policy.header)
    if header then
        -- $http_<name>: lower case, '-' becomes '_', as NGINX names them.
        prepared.header_var = "http_" .. str_gsub(str_lower(header), "-", "_")
        prepared.header_value = nonempty(policy.headerValue)
        prepared.header_pattern = nonempty(policy.headerPattern)
    end
    local cookie = nonempty(policy.cookie)
    if cookie then
        prepared.cookie_var = "cookie_" .. cookie
    end
    return prepared
end

-- The canary fields go on the instance on every build (they change without
-- the endpoints changing). Like ingress-nginx, only the first alternative
-- backend is used.
local function set_canary(instance, backend)
    local alternatives = backend.alternativeBackends
    instance.alternative_backend = type(alternatives) == "table" and nonempty(alternatives[1]) or nil
    instance.traffic_shaping = prepare_policy(backend.trafficShapingPolicy)
    -- The policy of each canary Ingress using this backend, by Ingress:
    -- a location names its own (rewrite's canary arguments).
    local by_ingress = nil
    if type(backend.canaryPolicies) == "table" then
        for ingress, policy in pairs(backend.canaryPolicies) do
            local prepared = type(ingress) == "string" and prepare_policy(policy)
            if prepared then
                by_ingress = by_ingress or {}
                by_ingress[ingress] = prepared
            end
        end
    end
    instance.canary_policies = by_ingress
end

-- Builds the instance of one decoded backend, reusing the current one
-- when the algorithm stays, so it keeps its state (rotation position, EWMA
-- scores, ...).
local function build_one(backend)
    local name = backend.name
    local algorithm = algorithm_for(backend)
    local prepared = {
        name = name,
        endpoints = prepare_endpoints(backend),
        -- Read (and checked again) by the algorithms that use them.
        upstreamHashByConfig = backend.upstreamHashByConfig,
        sessionAffinityConfig = backend.sessionAffinityConfig,
    }
    -- rawget: a backend not built yet is not loaded from here.
    local instance = rawget(backends, name)
    if instance and instance.algorithm == algorithm then
        instance:sync(prepared)
    else
        instance = algorithms[algorithm].new(prepared)
        instance.algorithm = algorithm
    end
    set_canary(instance, backend)
    -- custom-http-errors send the Service to the error backend.
    instance.service = type(backend.service) == "table" and backend.service or nil
    return instance
end

-- Decodes one stored backend; nil (logged) when it cannot be used, which
-- the configuration endpoint's validation makes unexpected.
local function decode(name, json)
    local backend, err = json_decode(json)
    if type(backend) ~= "table" or backend.name ~= name then
        ngx_log(ERR, "switchyard: cannot decode backend ", name, ": ", tostring(err))
        return nil
    end
    return backend
end

-- Whether an instance has a header_filter or log hook.
local function hooks(instance)
    return instance.header_filter ~= nil, instance.log ~= nil
end

-- Whether any built instance has a header_filter or log hook, and their
-- count.
local function survey(instances)
    local count, header_filter, log = 0, false, false
    for _, instance in pairs(instances) do
        count = count + 1
        local h, l = hooks(instance)
        header_filter = header_filter or h
        log = log or l
    end
    return count, header_filter, log
end

-- rebuild reads and builds the stored backend of name: its instance;
-- false when none is stored (or it cannot be used); nil when publishes
-- kept freeing its value before it was read.
local function rebuild(dict, name)
    local json = backend_store.read(dict, name)
    if json == nil then
        return nil
    end
    local backend = json and decode(name, json)
    return backend and build_one(backend) or false
end

-- load is the cache's __index: the stored backend of that name, built,
-- or nil when there is none (not cached: an unknown name may be published
-- later). Its value may be newer than the loaded version; the change
-- lists after that version rebuild it then, with the same or a newer
-- value.
local function load(cache, name)
    if type(name) ~= "string" then
        return nil
    end
    local instance = rebuild(ngx_shared.switchyard_config, name)
    if not instance then
        return nil
    end
    rawset(cache, name, instance)
    local h, l = hooks(instance)
    any_header_filter = any_header_filter or h
    any_log = any_log or l
    return instance
end

local CACHE = { __index = load }

local function new_cache()
    return setmetatable({}, CACHE)
end
backends = new_cache()

-- Rebuilds the built backends from the stored ones, for a worker that
-- cannot tell what changed (the change lists are gone, or it loaded
-- nothing yet); version is the one read before. The others are built when
-- a request asks for them. Returns false when publishes kept freeing a
-- value before it was read.
local function load_all(dict, version)
    local result = new_cache()
    for name in pairs(backends) do
        local instance = rebuild(dict, name)
        if instance == nil then
            return false
        end
        if instance then
            rawset(result, name, instance)
        end
    end
    local count
    backends = result
    count, any_header_filter, any_log = survey(backends)
    ngx_log(NOTICE, "switchyard: loaded backends version ", version, " (", count, " in use)")
    return true
end

-- Rebuilds the named backends that are built, with their newest values;
-- the others keep their instances untouched, and a name not built yet is
-- built with its newest value when a request asks for it. Returns false,
-- having changed nothing, when publishes kept freeing a value before it
-- was read.
local function load_changes(dict, version, names)
    local changed, removed, count = {}, {}, 0
    for name in pairs(names) do
        if rawget(backends, name) then
            local instance = rebuild(dict, name)
            if instance == nil then
                return false
            end
            if instance then
                changed[name] = instance
            else
                removed[#removed + 1] = name
            end
        end
        count = count + 1
    end
    for name, instance in pairs(changed) do
        rawset(backends, name, instance)
    end
    for _, name in ipairs(removed) do
        rawset(backends, name, nil)
    end
    local total
    total, any_header_filter, any_log = survey(backends)
    ngx_log(NOTICE, "switchyard: loaded backends version ", version, " (", count, " changed, ", total,
            " in use)")
    return true
end

-- After a read that raced a publish, the next try waits this long, so
-- requests during a big publish do not each scan the dict.
local RACE_BACKOFF = 0.005
local retry_at = 0

-- Loads the published backends when their version differs from the loaded
-- one: only the changed ones when the change lists since the loaded
-- version are there, else all. Values newer than the version read may be
-- taken; loaded_version stays the version read first, so the next sync
-- reloads whatever changed after it. The common case is a single shared
-- dict read.
local function sync()
    local dict = ngx_shared.switchyard_config
    local version = backend_store.version(dict)
    if version == loaded_version or not version or version == 0 then
        return
    end
    local now = ngx.now()
    if now < retry_at then
        return
    end
    local names = backend_store.changes(dict, loaded_version, version)
    local done
    if names then
        done = load_changes(dict, version, names)
    else
        done = load_all(dict, version)
    end
    if done then
        loaded_version = version
    else
        retry_at = now + RACE_BACKOFF
    end
end

local function on_timer(premature)
    if premature then
        return
    end
    -- A failure must not stop this worker's timer chain; ngx.timer.every keeps
    -- firing, and pcall keeps the error in the log instead of a traceback loop.
    local ok, err = pcall(sync)
    if not ok then
        ngx_log(ERR, "switchyard: syncing backends failed: ", err)
    end
end

function _M.init_worker()
    math.randomseed(ngx.now() * 1000 + ngx.worker.pid())
    local ok, err = ngx.timer.every(SYNC_INTERVAL, on_timer)
    if not ok then
        ngx_log(ERR, "switchyard: cannot start the backend sync timer: ", err)
    end
    -- Load what is already published (e.g. after a reload) without waiting
    -- for the first tick.
    ok, err = ngx.timer.at(0, on_timer)
    if not ok then
        ngx_log(ERR, "switchyard: cannot schedule the initial backend sync: ", err)
    end
end

-- Right after NGINX starts, it listens before the controller has posted the
-- backends. A request in that window waits for them (bounded) instead of
-- getting a 503 for a backend that is about to exist.
local FIRST_CONFIG_WAIT = 5 -- seconds
local FIRST_CONFIG_POLL = 0.01

local function wait_for_first_configuration()
    local deadline = ngx.now() + FIRST_CONFIG_WAIT
    while loaded_version == nil and ngx.now() < deadline do
        ngx.sleep(FIRST_CONFIG_POLL)
        sync()
    end
end

-- Decides whether this request goes to the canary, as ingress-nginx's
-- route_to_alternative_balancer: header, then cookie, then weight.
local function route_to_canary(policy)
    local header_var = policy.header_var
    if header_var then
        local header = ngx_var[header_var]
        if header then
            if policy.header_value then
                if header == policy.header_value then
                    return true
                end
            elseif policy.header_pattern then
                local m, err = ngx_re_match(header, policy.header_pattern, "jo")
                if m then
                    return true
                elseif err then
                    ngx_log(ERR, "switchyard: canary-by-header-pattern \"", policy.header_pattern,
                            "\" failed: ", err)
                    return false
                end
            elseif header == "always" then
                return true
            elseif header == "never" then
                return false
            end
        end
    end
    local cookie_var = policy.cookie_var
    if cookie_var then
        local cookie = ngx_var[cookie_var]
        if cookie == "always" then
            return true
        elseif cookie == "never" then
            return false
        end
    end
    return math_random(policy.weight_total) <= policy.weight
end

-- Returns the canary backend and its name when this request goes there.
local function canary_for(backend)
    local alt_name = backend.alternative_backend
    if not alt_name then
        return nil
    end
    local alt = backends[alt_name]
    if not alt then
        ngx_log(ERR, "switchyard: no alternative backend named \"", alt_name, "\"")
        return nil
    end
    local policy = alt.traffic_shaping
    if not policy then
        ngx_log(ERR, "switchyard: alternative backend ", alt_name, " has no trafficShapingPolicy")
        return nil
    end
    if route_to_canary(policy) then
        return alt, alt_name
    end
    return nil
end

-- Returns the canary backend and its name when this request goes to the
-- canary declared for the location's host and path: canary_ingress's
-- policy on canary_name's backend. Without that policy (the canary Ingress
-- was rejected) the primary serves alone.
local function location_canary_for(canary_name, canary_ingress)
    local alt = backends[canary_name]
    if not alt then
        ngx_log(ERR, "switchyard: no canary backend named \"", canary_name, "\"")
        return nil
    end
    local policy = alt.canary_policies and alt.canary_policies[canary_ingress]
    if not policy then
        ngx_log(INFO, "switchyard: canary backend ", canary_name, " has no policy of ", tostring(canary_ingress))
        return nil
    end
    if route_to_canary(policy) then
        return alt, canary_name
    end
    return nil
end

-- Tells an error backend which Service the request was for.
local function tag(backend)
    local svc = backend.service
    if svc then
        ngx_var.service_name = tostring(svc.name or "")
        ngx_var.service_port = tostring(svc.port or "")
    end
end

-- rewrite_by_lua: resolves the location's backend to an instance, answering
-- 503 when it is unknown or has no endpoints. The renderer passes the
-- backend's name as a literal (the same value it sets $proxy_upstream_name
-- to, for the access log), which saves a variable read per request; without
-- it, $proxy_upstream_name names the backend. The instance is kept in
-- ngx.ctx so the balancer phase uses the backend checked here even if a
-- sync runs in between.
--
-- The renderer also passes the canary declared for the location's host and
-- path (its backend and Ingress), or nothing when there is none: then the
-- location never goes to a canary. Only a hook called without a name (no
-- renderer) uses the backend-wide alternativeBackends, as ingress-nginx.
--
-- fallback_name is the default-backend annotation's backend: it serves
-- while the chosen backend has no endpoint (ingress-nginx's behaviour).
-- tag_service is true where custom-http-errors may send the request to an
-- error backend, which is told the Service ($service_name, $service_port,
-- declared by the server when it intercepts errors).
--
-- timeouts, from a Lua-routed host's location (router.lua), are its
-- proxy-*-timeout in seconds ({connect=, send=, read=}, each nil for the
-- http block's): the balancer phase sets them, where a server block's
-- location has proxy_*_timeout directives.
--
-- labels and host are the location's per-request metrics labels (path,
-- namespace, Ingress and Service joined by byte 1; the host label), which
-- the renderer and router.lua pass as literals: the log phase takes them
-- from the state kept here instead of reading five variables
-- (switchyard.metrics). Without them it reads the variables.
function _M.rewrite(name, canary_name, canary_ingress, fallback_name, tag_service, timeouts, labels, host)
    sync()
    if loaded_version == nil then
        wait_for_first_configuration()
    end
    local from_renderer = name ~= nil
    name = name or ngx_var.proxy_upstream_name
    local backend = name and backends[name]
    if not backend then
        ngx_log(INFO, "switchyard: no backend named \"", tostring(name), "\"")
        return ngx_exit(ngx.HTTP_SERVICE_UNAVAILABLE)
    end
    local alt, alt_name
    if canary_name then
        alt, alt_name = location_canary_for(canary_name, canary_ingress)
    elseif not from_renderer then
        alt, alt_name = canary_for(backend)
    end
    local canary
    if alt then
        -- As in ingress-nginx, $proxy_upstream_name stays the primary and
        -- $proxy_alternative_upstream_name names the canary.
        ngx_var.proxy_alternative_upstream_name = alt_name
        backend, name, canary = alt, alt_name, alt_name
    end
    if tag_service then
        tag(backend)
    end
    if #backend.endpoints == 0 and fallback_name then
        local fallback = backends[fallback_name]
        if fallback and #fallback.endpoints > 0 then
            backend, name = fallback, fallback_name
        end
    end
    if #backend.endpoints == 0 then
        ngx_log(INFO, "switchyard: backend ", name, " has no endpoints")
        return ngx_exit(ngx.HTTP_SERVICE_UNAVAILABLE)
    end
    local state = { backend = backend, name = name, tries = 0, timeouts = timeouts, labels = labels, host = host,
                    canary = canary }
    ngx.ctx.switchyard = state
    -- Algorithms that answer with a header (sticky cookies) choose here.
    if backend.rewrite then
        backend:rewrite(state)
    end
end

-- Ends the request from the balancer phase. On stock nginx (no OpenResty
-- balancer status patch) lua-nginx-module turns any status >= 300 given to
-- ngx.exit here into NGX_ERROR, which nginx answers with 500; with the patch
-- it becomes a real 503. rewrite() makes this path rare: it only runs when
-- the configuration changed between rewrite and balancer or when
-- set_current_peer rejects every endpoint.
local function unavailable()
    return ngx_exit(ngx.HTTP_SERVICE_UNAVAILABLE)
end

-- State for this request, normally created by rewrite(); a location without
-- the rewrite hook still works by looking the backend up here.
local function request_state(ctx)
    local state = ctx.switchyard
    if state then
        return state
    end
    sync()
    local name = ngx_var.proxy_upstream_name
    local backend = name and backends[name]
    if not backend then
        return nil, name
    end
    state = { backend = backend, name = name, tries = 0 }
    ctx.switchyard = state
    return state
end

-- balancer_by_lua: sets the peer for this try of the request.
function _M.balance()
    local state, name = request_state(ngx.ctx)
    if not state then
        ngx_log(ERR, "switchyard: balancer found no backend named \"", tostring(name), "\"")
        return unavailable()
    end

    local backend = state.backend
    if state.tries > 0 then
        local failure, code = get_last_failure()
        ngx_log(INFO, "switchyard: retrying backend ", state.name, " after ",
                tostring(failure), " (", tostring(code), ") from the previous endpoint")
    end

    -- Endpoints set_current_peer rejects (e.g. a hostname where an IP is
    -- expected) are skipped in this same try.
    local n = #backend.endpoints
    for _ = 1, n do
        local endpoint = backend:balance(state)
        if not endpoint then
            break
        end
        local ok, err = set_current_peer(endpoint.address, endpoint.port)
        if ok then
            state.tries = state.tries + 1
            local timeouts = state.timeouts
            if timeouts then
                -- Kept for the request's later tries too (NGINX copies its
                -- upstream settings for this request), set again anyway.
                local _, terr = set_timeouts(timeouts.connect, timeouts.send, timeouts.read)
                if terr then
                    ngx_log(ERR, "switchyard: set_timeouts: ", terr)
                end
            end
            -- Let nginx retry (within proxy_next_upstream_tries) while there
            -- is an endpoint this request has not tried yet.
            if state.tries < n then
                local _, warn = set_more_tries(1)
                if warn then
                    ngx_log(INFO, "switchyard: set_more_tries: ", warn)
                end
            end
            return
        end
        ngx_log(ERR, "switchyard: cannot use endpoint ", endpoint.address, ":",
                tostring(endpoint.port), " of backend ", state.name, ": ", err)
    end

    ngx_log(ERR, "switchyard: backend ", state.name, " has no usable endpoint")
    return unavailable()
end

-- header_filter_by_lua (http level in nginx.conf.tmpl): lets the request's
-- algorithm change response headers after the balancer phase, e.g. the new
-- cookie of a sticky session that change-on-failure moved.
function _M.header_filter()
    if not any_header_filter then
        return
    end
    local state = ngx.ctx.switchyard
    if state and state.backend.header_filter then
        state.backend:header_filter(state)
    end
end

-- log_by_lua (http level in nginx.conf.tmpl): feeds the upstream timings of
-- the request to its algorithm (EWMA scores).
function _M.log()
    if not any_log then
        return
    end
    local state = ngx.ctx.switchyard
    if state and state.backend.log then
        state.backend:log(state)
    end
end

return _M
