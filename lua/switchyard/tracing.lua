-- Request tracing (OpenTelemetry, W3C Trace Context), done in Lua: Debian
-- ships no OpenTelemetry module for NGINX.
--
-- For a location with tracing on (the ConfigMap's enable-opentelemetry,
-- or the Ingress's enable-opentelemetry annotation, which wins), the
-- rewrite phase continues the client's traceparent when
-- opentelemetry-trust-incoming-span allows it, or starts a new trace, and
-- sends the request upstream with a traceparent naming this request's
-- span. The sampler (otel-sampler, otel-sampler-ratio,
-- otel-sampler-parent-based) decides whether the span is recorded; the
-- traceparent goes upstream either way, with its sampled flag.
--
-- The log phase writes a sampled span as one JSON object into the
-- switchyard_traces shared dict, a list of at most otel-max-queuesize
-- entries: when the list is full or the dict has no memory left, the span
-- is dropped and counted ("dropped"), never an error of the request. The
-- controller drains the list through the configuration endpoint
-- (POST /traces) and exports the spans over OTLP.
--
-- A location's own choice comes in $switchyard_otel, which the renderer
-- sets from the annotations: "" (the ConfigMap decides), else one
-- character for enabled ("0"/"1"), one for trust ("0"/"1", "-" for the
-- ConfigMap's), and the operation name ("" for the ConfigMap's). The http
-- block declares the variable with a map, so reading it where no location
-- set it is "" and no warning.

local cjson = require("cjson.safe")
local cjson_encode = cjson.encode

local ngx = ngx
local ngx_var = ngx.var
local tonumber = tonumber
local type = type
local tostring = tostring
local byte, sub, find, fmt = string.byte, string.sub, string.find, string.format
local random = math.random
local get_method = ngx.req.get_method
local tbl_concat = table.concat

local _M = {}

local QUEUE = "spans"
local DROPPED = "dropped"

-- config is nil while tracing is off everywhere (no collector): then each
-- hook is one comparison.
local config
local dict

-- Variables an operation name may use (bus/features: the renderer checks
-- the same list): none carries a credential or a query string.
local NAME_VARIABLES = {
    request_method = true, uri = true, host = true, server_name = true, scheme = true,
    server_port = true, status = true, namespace = true, ingress_name = true,
    service_name = true, service_port = true, location_path = true, proxy_upstream_name = true,
}

-- init_by_lua with the controller settings: enabled, trust, operation,
-- sampler ("AlwaysOn", "AlwaysOff", "TraceIdRatioBased"), ratio,
-- parent_based, max_queue, and for the controller endpoint, service,
-- delay_ms and batch.
function _M.init(c)
    dict = ngx.shared.switchyard_traces
    if not dict then
        return
    end
    config = c
    config.ratio = tonumber(c.ratio) or 0
    config.max_queue = tonumber(c.max_queue) or 2048
    -- Kept over a reload (safe_add leaves an existing value).
    dict:safe_add(DROPPED, 0)
end

-- parsed location specs: spec -> { enabled, trust (nil: the ConfigMap's),
-- name (nil: the ConfigMap's) }. A reload starts the table afresh.
local specs = {}

local function location_settings()
    local spec = ngx_var.switchyard_otel
    if not spec or spec == "" then
        return config.enabled, config.trust, config.operation
    end
    local s = specs[spec]
    if not s then
        local t, name = sub(spec, 2, 2), sub(spec, 3)
        local trust
        if t ~= "-" then
            trust = t == "1"
        end
        s = { sub(spec, 1, 1) == "1", trust, name ~= "" and name or nil }
        specs[spec] = s
    end
    local trust, name = s[2], s[3]
    if trust == nil then
        trust = config.trust
    end
    return s[1], trust, name or config.operation
end

local HEX = "^%x+$"

-- parse_traceparent returns the trace id, parent span id and sampled flag
-- of a W3C traceparent of version 00 (or a later version read as 00),
-- nil for anything else.
local function parse_traceparent(h)
    if type(h) ~= "string" or #h < 55 then
        return nil
    end
    if byte(h, 3) ~= 45 or byte(h, 36) ~= 45 or byte(h, 53) ~= 45 then -- "-"
        return nil
    end
    local version, trace_id, span_id, flags = sub(h, 1, 2), sub(h, 4, 35), sub(h, 37, 52), sub(h, 54, 55)
    if version == "ff" or (version == "00" and #h ~= 55) or (#h > 55 and byte(h, 56) ~= 45) then
        return nil
    end
    if not (find(version, HEX) and find(trace_id, HEX) and find(span_id, HEX) and find(flags, HEX)) then
        return nil
    end
    if trace_id == "00000000000000000000000000000000" or span_id == "0000000000000000" then
        return nil
    end
    -- lower case only, as the specification says
    if find(trace_id, "%u") or find(span_id, "%u") then
        return nil
    end
    return trace_id, span_id, tonumber(flags, 16) % 2 == 1
end
_M.parse_traceparent = parse_traceparent

local function random_hex(words)
    if words == 4 then
        return fmt("%08x%08x%08x%08x", random(0, 0xffffffff), random(0, 0xffffffff),
            random(0, 0xffffffff), random(1, 0xffffffff))
    end
    return fmt("%08x%08x", random(0, 0xffffffff), random(1, 0xffffffff))
end

-- ratio_sampled: TraceIdRatioBased decides from the trace id alone, so
-- every proxy of a trace decides alike: its last 13 hex digits (52 bits)
-- as a fraction below the ratio.
local function ratio_sampled(trace_id, ratio)
    if ratio >= 1 then
        return true
    end
    return tonumber(sub(trace_id, 20), 16) / 4503599627370496 < ratio
end

-- sampled is the decision of the sampler of settings c (sampler, ratio,
-- parent_based); parent_sampled is nil without a trusted parent.
local function sampled(c, trace_id, parent_sampled)
    if c.parent_based and parent_sampled ~= nil then
        return parent_sampled
    end
    local s = c.sampler
    if s == "AlwaysOn" then
        return true
    elseif s == "TraceIdRatioBased" then
        return ratio_sampled(trace_id, c.ratio)
    end
    return false
end
_M.sampled = sampled

-- rewrite (called from switchyard.ingress.rewrite, every location's
-- rewrite hook): start or continue the trace, and send it upstream.
function _M.rewrite()
    if not config then
        return
    end
    local enabled, trust, name = location_settings()
    if not enabled then
        return
    end
    local trace_id, parent_id, parent_sampled
    if trust then
        trace_id, parent_id, parent_sampled = parse_traceparent(ngx_var.http_traceparent)
    else
        -- a new trace: the client's tracestate belongs to the other one
        ngx.req.clear_header("tracestate")
    end
    if not trace_id then
        trace_id = random_hex(4)
    end
    local span_id = random_hex(2)
    local is_sampled = sampled(config, trace_id, parent_sampled)
    ngx.req.set_header("traceparent", "00-" .. trace_id .. "-" .. span_id .. (is_sampled and "-01" or "-00"))
    if is_sampled then
        ngx.ctx.switchyard_span = { trace_id, span_id, parent_id or "", name or "" }
    end
end

-- operation names: name -> list of literal strings and { variable }.
local names = {}

local function compile_name(name)
    local parts = {}
    local pos = 1
    while true do
        local s, e, var = find(name, "%$([%a_][%w_]*)", pos)
        if not s then
            parts[#parts + 1] = sub(name, pos)
            break
        end
        parts[#parts + 1] = sub(name, pos, s - 1)
        parts[#parts + 1] = NAME_VARIABLES[var] and { var } or ""
        pos = e + 1
    end
    names[name] = parts
    return parts
end

-- operation_name expands the name's variables; "" is ingress-nginx's
-- default, the location (here the Ingress path; "/" for the catch-all).
local function operation_name(name)
    if name == "" then
        local path = ngx_var.location_path
        return (path and path ~= "") and path or "/"
    end
    local parts = names[name] or compile_name(name)
    local out = {}
    for i = 1, #parts do
        local p = parts[i]
        if type(p) == "table" then
            out[i] = ngx_var[p[1]] or ""
        else
            out[i] = p
        end
    end
    return tbl_concat(out)
end

-- number is a variable read as a number: the last of several upstream
-- tries ("0.001, 0.002"), nil for none.
local function number(v)
    if not v then
        return nil
    end
    local last = v
    local at = find(v, "[,:] [^,:]*$")
    if at then
        last = sub(v, at + 2)
    end
    return tonumber(last)
end

local function enqueue(record)
    local len = dict:rpush(QUEUE, record)
    if not len then
        dict:incr(DROPPED, 1, 0)
        return
    end
    if len > config.max_queue then
        -- Over otel-max-queuesize: drop the newest (this one, or one
        -- another worker pushed meanwhile: the count is the same).
        dict:rpop(QUEUE)
        dict:incr(DROPPED, 1, 0)
    end
end

-- json is a JSON value for v: a string escaped by cjson, a number as it
-- is, nil as null. (Quoting the strings that need no escaping in Lua
-- instead was measured slower: a pattern match and three more pieces to
-- concatenate cost more than cjson's C.)
local function json(v)
    if v == nil then
        return "null"
    end
    if type(v) == "number" then
        return tostring(v)
    end
    return cjson_encode(v)
end

-- The attributes of a span and the variable each one is read from; the
-- numbers are the last value of a list of upstream tries.
local STRING_ATTRS = {
    { ',"http.target":', "request_uri" },
    { ',"http.scheme":', "scheme" },
    { ',"http.host":', "host" },
    { ',"http.user_agent":', "http_user_agent" },
    { ',"net.peer.ip":', "remote_addr" },
    { ',"ingress.namespace":', "namespace" },
    { ',"ingress.name":', "ingress_name" },
    { ',"ingress.service_name":', "service_name" },
    { ',"ingress.service_port":', "service_port" },
    { ',"ingress.path":', "location_path" },
    { ',"ingress.upstream":', "proxy_upstream_name" },
    { ',"upstream.address":', "upstream_addr" },
}
local NUMBER_ATTRS = {
    { ',"upstream.status":', "upstream_status" },
    { ',"upstream.connect_time":', "upstream_connect_time" },
    { ',"upstream.header_time":', "upstream_header_time" },
    { ',"upstream.response_time":', "upstream_response_time" },
}

-- One buffer per worker: the log phase of one request runs at a time.
local buf = {}

-- log (the http block's log hook): record the sampled span, as one JSON
-- object built by concatenation (cheaper than a table for cjson).
function _M.log()
    if not config then
        return
    end
    local span = ngx.ctx.switchyard_span
    if not span then
        return
    end
    -- ngx.status and the method without a variable lookup by name.
    local status = ngx.status
    local b = buf
    b[1], b[2], b[3], b[4], b[5], b[6] = '{"t":"', span[1], '","s":"', span[2], '","p":"', span[3]
    b[7], b[8], b[9], b[10] = '","n":', json(operation_name(span[4])), ',"b":', tostring(ngx.req.start_time())
    b[11], b[12] = ',"e":', tostring(ngx.now())
    b[13] = status >= 500 and ',"err":true,"a":{"http.status_code":' or ',"err":false,"a":{"http.status_code":'
    b[14], b[15], b[16] = tostring(status), ',"http.flavor":', json(sub(ngx_var.server_protocol or "", 6))
    b[17], b[18] = ',"http.method":', json(get_method())
    local n = 18
    for i = 1, #STRING_ATTRS do
        local a = STRING_ATTRS[i]
        local v = ngx_var[a[2]]
        if v then
            b[n + 1], b[n + 2] = a[1], json(v)
            n = n + 2
        end
    end
    for i = 1, #NUMBER_ATTRS do
        local a = NUMBER_ATTRS[i]
        local v = number(ngx_var[a[2]])
        if v then
            b[n + 1], b[n + 2] = a[1], tostring(v)
            n = n + 2
        end
    end
    n = n + 1
    b[n] = "}}"
    local record = tbl_concat(buf, "", 1, n)
    enqueue(record)
end

-- POST /traces?max=N on the configuration endpoint: removes up to N spans
-- (otel-max-export-batch-size) from the queue and answers them with the
-- settings the controller exports with and the drop count, as JSON.
function _M.drain()
    ngx.header["Content-Type"] = "application/json"
    if not config then
        ngx.status = 404
        ngx.print('{"error":"request tracing is off"}')
        return ngx.exit(ngx.OK)
    end
    local max = tonumber(ngx_var.arg_max) or config.batch or 512
    -- The answer's pieces: "," between the spans, the head and tail put
    -- in below. ngx.print copies them into its buffers; no string of the
    -- whole batch (megabytes) is made here.
    local out = { "", ',"spans":[' }
    local n = 2
    for i = 1, max do
        local v = dict:lpop(QUEUE)
        if not v then
            break
        end
        if i > 1 then
            n = n + 1
            out[n] = ","
        end
        n = n + 1
        out[n] = v
    end
    local head = cjson.encode({
        endpoint = config.endpoint or "",
        service = config.service or "",
        delay_ms = config.delay_ms or 5000,
        batch = config.batch or 512,
        dropped = dict:get(DROPPED) or 0,
        queued = dict:llen(QUEUE) or 0,
        capacity = dict:capacity(),
        free = dict:free_space(),
    })
    ngx.status = 200
    -- The spans are JSON already: spliced in, not decoded and encoded again.
    out[1] = sub(head, 1, -2)
    out[n + 1] = "]}"
    ngx.print(out)
    return ngx.exit(ngx.OK)
end

return _M
