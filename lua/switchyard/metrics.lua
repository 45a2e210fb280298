-- Per-request metrics, with ingress-nginx's names, labels and buckets.
--
-- ingress-nginx ships every request as JSON over a socket to the
-- controller. Here the log phase counts each request in its worker, and
-- every second the worker adds its counts to the switchyard_metrics
-- shared dict: one key per (histogram, bucket, label set) and one per
-- (histogram, label set) for the sum, updated with incr. The controller
-- reads the whole dict on scrape (serve(), a GET on the unix-socket
-- configuration endpoint) and exposes the aggregates.
--
-- Keys are "<histogram>\1<bucket index or s>\1<labels>", the labels
-- joined by "\1": status, method, path, namespace, ingress, service,
-- canary, host. Buckets are not cumulative (the controller adds them up);
-- the last index is +Inf, so a histogram's count is the sum of its
-- buckets, and the requests counter is request_duration's count.
--
-- Label values are bounded: path is the location's Ingress path, host the
-- server's name ("_" for the catch-all; a Lua-routed host's name, which
-- router.lua leaves in ngx.ctx), method one of the known methods
-- or "OTHER". New keys are added with safe_add, which never evicts: when
-- the dict is full, a new series is not counted, and the "dropped" key
-- (created at start) says how many requests lost data that way (some of
-- a request's keys may have been added: it is counted as dropped).

local ngx = ngx
local ngx_var = ngx.var
local tonumber = tonumber
local ipairs = ipairs
local pairs = pairs
local pcall = pcall
local type = type
local tbl_concat = table.concat
local fmt = string.format
local setmetatable = setmetatable
local get_method = ngx.req.get_method
local now = ngx.now
local start_time = ngx.req.start_time
local floor = math.floor
local cjson = require("cjson.safe")

local _M = {}

local SEP = "\1"
local DROPPED = "dropped"
-- The bucket lists the counts were made with.
local BUCKETS_KEY = "buckets"

-- Bucket bounds as ingress-nginx's defaults: time (prometheus.DefBuckets),
-- length (linear 10..100) and size (exponential 10..10^7).
local TIME = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }
local LENGTH = { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 }
local SIZE = { 10, 100, 1000, 10000, 100000, 1000000, 10000000 }

-- The histograms: their key prefix, buckets and the variable observed.
-- request_duration is always observed (it counts the requests); the
-- upstream ones only when the request reached one upstream (a list of
-- several tries, or none, is not a number: skipped, as ingress-nginx).
local HISTOGRAMS = {
    { code = "rd", buckets = TIME, var = "request_time" },
    { code = "cd", buckets = TIME, var = "upstream_connect_time" },
    { code = "hd", buckets = TIME, var = "upstream_header_time" },
    { code = "sd", buckets = TIME, var = "upstream_response_time" },
    { code = "rq", buckets = LENGTH, var = "request_length" },
    { code = "rs", buckets = LENGTH, var = "bytes_sent" },
    { code = "bs", buckets = SIZE, var = "bytes_sent" },
}

-- Methods counted by name; any other token a client sends is "OTHER", so
-- a client cannot make series up.
local METHODS = {
    GET = true, HEAD = true, POST = true, PUT = true, DELETE = true, CONNECT = true,
    OPTIONS = true, TRACE = true, PATCH = true,
}

-- The bucket bounds by histogram code, sent with the values so that the
-- controller and this file cannot disagree.
local function bounds()
    local out = {}
    for _, h in ipairs(HISTOGRAMS) do
        out[h.code] = h.buckets
    end
    return out
end

local dict

-- Each worker adds a request to its own table, not to the shared dict:
-- a request costs a few table updates and no lock. A timer adds the
-- table to the dict every FLUSH_INTERVAL (and when the worker exits), so
-- a scrape sees requests at most that late, as in ingress-nginx, whose
-- workers send their batches every second.
local FLUSH_INTERVAL = 1 -- seconds
-- Label sets a worker holds between two flushes; a request of a new one
-- beyond this is not counted (in "dropped"): worker memory stays bounded.
local MAX_PENDING = 10000

-- Slots: each histogram's buckets (the last +Inf) and then its sum.
-- slot_keys[slot] is the dict key's start, the labels its end.
local slot_keys
local REQUESTS -- requests in the table, for "dropped"

local function build_slots()
    slot_keys = {}
    for _, h in ipairs(HISTOGRAMS) do
        h.first = #slot_keys + 1
        for i = 1, #h.buckets + 1 do
            slot_keys[#slot_keys + 1] = h.code .. SEP .. i .. SEP
        end
        h.sum = #slot_keys + 1
        slot_keys[h.sum] = h.code .. SEP .. "s" .. SEP
    end
    REQUESTS = #slot_keys + 1
end
build_slots()

-- labels -> { [slot] = count or sum, [REQUESTS] = requests }
local pending = {}
local pending_count = 0
local pending_lost = 0

-- The bucket lists by the name of their flag (renderer: MetricsBuckets).
local BUCKET_LISTS = { time = TIME, length = LENGTH, size = SIZE }

-- Sets the bucket lists the renderer passes (the flags), in place, so
-- HISTOGRAMS sees them.
local function set_buckets(lists)
    for name, default in pairs(BUCKET_LISTS) do
        local list = lists[name]
        if type(list) == "table" and #list > 0 then
            for i = #default, 1, -1 do
                default[i] = nil
            end
            for i, v in ipairs(list) do
                default[i] = v
            end
        end
    end
end

-- init_by_lua, with the bucket lists of the flags (nil: the defaults).
-- A bucket index means another bound under other lists, so when they
-- changed since the counts in the dict were made, the dict starts over
-- (a counter reset, which Prometheus handles). The dropped counter exists
-- before any series, so counting a drop needs no memory; safe_add keeps
-- its value over a reload.
function _M.init(buckets)
    if type(buckets) == "table" then
        set_buckets(buckets)
        build_slots()
    end
    dict = ngx.shared.switchyard_metrics
    if not dict then
        return
    end
    local parts = {}
    for _, h in ipairs(HISTOGRAMS) do
        parts[#parts + 1] = h.code .. "=" .. tbl_concat(h.buckets, ",")
    end
    local spec = tbl_concat(parts, ";")
    if dict:get(BUCKETS_KEY) ~= spec then
        dict:flush_all()
        dict:flush_expired()
        dict:set(BUCKETS_KEY, spec)
    end
    dict:safe_add(DROPPED, 0)
end

-- index of the bucket of value v: the first bound >= v, or #bounds + 1.
local function bucket(bounds, v)
    for i = 1, #bounds do
        if v <= bounds[i] then
            return i
        end
    end
    return #bounds + 1
end

-- add adds v to key; false when the key is new and the dict has no room.
local function add(key, v)
    local _, err = dict:incr(key, v)
    if not err then
        return true
    end
    local ok, aerr = dict:safe_add(key, v)
    if ok then
        return true
    end
    if aerr == "exists" then
        -- another worker added it in between
        return dict:incr(key, v) ~= nil
    end
    return false
end

-- flush adds this worker's table to the dict.
local function flush()
    local p, lost = pending, pending_lost
    pending, pending_count, pending_lost = {}, 0, 0
    for l, acc in pairs(p) do
        local complete = true
        for slot, v in pairs(acc) do
            if slot ~= REQUESTS and not add(slot_keys[slot] .. l, v) then
                complete = false
            end
        end
        if not complete then
            lost = lost + acc[REQUESTS]
        end
    end
    if lost > 0 then
        dict:incr(DROPPED, lost, 0)
    end
end

local function on_timer()
    -- Also when premature (the worker exits): what it counted is kept.
    local ok, err = pcall(flush)
    if not ok then
        ngx.log(ngx.ERR, "switchyard: flushing request metrics failed: ", err)
    end
end

-- init_worker_by_lua: the flush timer.
function _M.init_worker()
    if not dict then
        return
    end
    local ok, err = ngx.timer.every(FLUSH_INTERVAL, on_timer)
    if not ok then
        ngx.log(ngx.ERR, "switchyard: cannot start the request metrics timer: ", err)
    end
end

-- value is a variable's value as a label: "" when the request has none.
local function value(v)
    return v or ""
end

-- host is the host label of a request without labels in its state: the
-- server's name, or for a request of the catch-all server the Lua-routed
-- host router.lua served it as.
local function host()
    local name = ngx_var.server_name
    if name == "_" then
        return ngx.ctx.switchyard_host or name
    end
    return value(name)
end

-- STATUS holds the status label of each code seen, as $status writes it
-- ("%03d"): ngx.status is read without a variable lookup by name, and
-- its string made once per code.
local STATUS = setmetatable({}, { __index = function(t, code)
    local s = fmt("%03d", code)
    t[code] = s
    return s
end })

-- request_time is $request_time's value without reading the variable
-- (a lookup by name, a formatted string and its parse): NGINX computes it
-- from the same cached clock and the request's start, in whole
-- milliseconds, never below zero.
local function request_time()
    local ms = floor((now() - start_time()) * 1000 + 0.5)
    if ms < 0 then
        return 0
    end
    return ms / 1000
end

-- labels of this request, joined. A proxied request's location passed
-- its labels to the balancer's rewrite hook (literals, the values its
-- variables hold), which keeps them in the request's state with the
-- canary it chose: five variable reads fewer than the fallback, which
-- reads them (a redirect, a 404, an error page's location).
local function labels()
    local method = get_method()
    if not METHODS[method] then
        method = "OTHER"
    end
    local state = ngx.ctx.switchyard
    if state and state.labels then
        return STATUS[ngx.status] .. SEP .. method .. SEP .. state.labels .. SEP .. (state.canary or "")
            .. SEP .. state.host
    end
    return STATUS[ngx.status] .. SEP .. method .. SEP .. value(ngx_var.location_path)
        .. SEP .. value(ngx_var.namespace) .. SEP .. value(ngx_var.ingress_name)
        .. SEP .. value(ngx_var.service_name) .. SEP .. value(ngx_var.proxy_alternative_upstream_name)
        .. SEP .. host()
end

-- log_by_lua (http level in nginx.conf.tmpl): counts this request.
function _M.log()
    if not dict then
        return
    end
    local l = labels()
    local acc = pending[l]
    if not acc then
        if pending_count >= MAX_PENDING then
            pending_lost = pending_lost + 1
            return
        end
        acc = { [REQUESTS] = 0 }
        pending[l] = acc
        pending_count = pending_count + 1
    end
    acc[REQUESTS] = acc[REQUESTS] + 1
    local var, v
    for i = 1, #HISTOGRAMS do
        local h = HISTOGRAMS[i]
        -- response_size and bytes_sent observe the same variable, one
        -- after the other: read once (an ngx.var read is a lookup by name).
        if h.var ~= var then
            var = h.var
            if var == "request_time" then
                v = request_time()
            else
                v = tonumber(ngx_var[var])
            end
        end
        if v then
            local slot = h.first + bucket(h.buckets, v) - 1
            acc[slot] = (acc[slot] or 0) + 1
            acc[h.sum] = (acc[h.sum] or 0) + v
        end
    end
end

-- Keys a scrape reads before it lets the worker's other requests run.
local YIELD_EVERY = 2000
-- CONFIG_DICTS are the dicts of the dynamic configuration (backends,
-- certificates) whose use the scrape reports.
local CONFIG_DICTS = { "switchyard_config", "switchyard_certs" }

-- GET /metrics on the configuration endpoint: a first line of JSON with
-- the bucket bounds and the dicts' use, then a line per key:
-- "<key>\t<value>" (a key may hold a tab, never a newline: the renderer
-- refuses label values with one, and the value is after the last tab).
-- With 1,000 Ingresses of traffic that is some 30,000 keys: printed from
-- a table of pieces (no string of it all built here, no JSON to escape
-- and parse).
function _M.serve()
    if not dict then
        ngx.header["Content-Type"] = "application/json"
        ngx.status = 404
        ngx.print('{"error":"per-request metrics are off"}')
        return ngx.exit(ngx.OK)
    end
    ngx.header["Content-Type"] = "text/plain"
    -- The dynamic configuration's dicts too: their use against their
    -- size tells when the renderer's sizing falls short.
    local dicts = {}
    for _, name in ipairs(CONFIG_DICTS) do
        local d = ngx.shared[name]
        if d then
            dicts[name] = { capacity = d:capacity(), free = d:free_space() }
        end
    end
    local parts = {
        cjson.encode({ buckets = bounds(), capacity = dict:capacity(), free = dict:free_space(), dicts = dicts }),
        "\n",
    }
    local n = 2
    -- 0: all keys. It locks the dict while it copies the key list, once
    -- per scrape; the worker serves its other requests in between reads.
    local keys = dict:get_keys(0)
    for i = 1, #keys do
        local key = keys[i]
        local v = dict:get(key)
        if type(v) == "number" then
            parts[n + 1], parts[n + 2], parts[n + 3], parts[n + 4] = key, "\t", v, "\n"
            n = n + 4
        end
        if i % YIELD_EVERY == 0 then
            ngx.sleep(0)
        end
    end
    ngx.status = 200
    ngx.print(parts)
    return ngx.exit(ngx.OK)
end

return _M
