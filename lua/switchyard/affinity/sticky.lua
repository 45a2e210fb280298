-- Cookie session affinity (sessionAffinityConfig.name == "cookie"), the
-- common part of switchyard.affinity.balanced and
-- switchyard.affinity.persistent. A mode module supplies:
--   mode.prepare(self, backend)      rebuild its lookup after an endpoint change
--   mode.find(self, value)           endpoint index for a cookie value, or nil
--   mode.pick(self, attempt)         index, cookie value for a new session,
--                                    avoiding attempt.tried where it can
--
-- The endpoint is chosen in the rewrite phase (rewrite(), called from
-- switchyard.balancer.rewrite) because ngx.header cannot be set in
-- balancer_by_lua; the cookie for a new session is set there, and the
-- balancer phase uses that pick for the first try. When change-on-failure
-- moves a session on a retry, the new cookie is set by header_filter()
-- (switchyard.balancer.header_filter, from header_filter_by_lua).
--
-- Cookie attributes come from annotations: the controller validates them,
-- and they are checked again here with whole-string patterns before they go
-- into a header; an invalid one is dropped (an invalid name falls back to the
-- default) and logged once per configuration change.

local util = require("switchyard.util.endpoints")

local ngx = ngx
local ngx_log = ngx.log
local ERR = ngx.ERR
local ngx_var = ngx.var
local ngx_time = ngx.time
-- RFC 1123 dates ("Sun, 06 Nov 1994 08:49:37 GMT"), which RFC 6265 prefers to
-- the two-digit years of ngx.cookie_time.
local http_time = ngx.http_time
local setmetatable = setmetatable
local tonumber = tonumber
local tostring = tostring
local type = type
local ipairs = ipairs
local string_lower = string.lower

local _M = {}

local DEFAULT_COOKIE_NAME = "INGRESSCOOKIE"

-- RFC 6265 token characters.
local NAME_PATTERN = "^[%w!#%$%%&'%*%+%-%.%^_`|~]+$"
-- A path without ";", "," or blanks: anything else could add attributes.
local PATH_PATTERN = "^/[%w%-%._~!%$&'%(%)%*%+=:@/%%]*$"
local DOMAIN_PATTERN = "^%.?[%w][%w%-%.]*$"
local SECONDS_PATTERN = "^%d%d?%d?%d?%d?%d?%d?%d?%d?%d?$"
local SAMESITE = { none = "None", lax = "Lax", strict = "Strict" }

local function check(value, pattern, max, what, backend, problems)
    if value == nil or value == "" then
        return nil
    end
    if type(value) ~= "string" or #value > max or not value:find(pattern) then
        problems[#problems + 1] = what .. " " .. tostring(value)
        return nil
    end
    return value
end

-- Turns sessionAffinityConfig.cookieSessionAffinity into checked settings.
function _M.cookie_config(backend)
    local affinity = type(backend.sessionAffinityConfig) == "table" and backend.sessionAffinityConfig or {}
    local c = type(affinity.cookieSessionAffinity) == "table" and affinity.cookieSessionAffinity or {}
    local problems = {}
    local cfg = {
        name = check(c.name, NAME_PATTERN, 128, "cookie name", backend, problems) or DEFAULT_COOKIE_NAME,
        path = check(c.path, PATH_PATTERN, 256, "cookie path", backend, problems) or "/",
        domain = check(c.domain, DOMAIN_PATTERN, 253, "cookie domain", backend, problems),
        expires = tonumber(check(c.expires, SECONDS_PATTERN, 10, "cookie expires", backend, problems)),
        maxage = tonumber(check(c.maxage, SECONDS_PATTERN, 10, "cookie max-age", backend, problems)),
        secure = c.secure == true,
        conditional_samesite_none = c.conditional_samesite_none == true,
        change_on_failure = c.change_on_failure == true,
    }
    if cfg.domain and cfg.domain:find("..", 1, true) then
        problems[#problems + 1] = "cookie domain " .. cfg.domain
        cfg.domain = nil
    end
    if c.samesite ~= nil and c.samesite ~= "" then
        cfg.samesite = type(c.samesite) == "string" and SAMESITE[string_lower(c.samesite)]
        if not cfg.samesite then
            problems[#problems + 1] = "cookie samesite " .. tostring(c.samesite)
        end
    end
    if #problems > 0 then
        ngx_log(ERR, "switchyard: backend ", backend.name, ": ignoring invalid ",
                table.concat(problems, ", "))
    end
    return cfg
end

-- User agents that reject or mishandle SameSite=None (they treat it as
-- Strict or drop the cookie): Chrome 51-66 and UC Browser before 12.13.2,
-- and iOS 12 / macOS 10.14 Safari and WebViews. The list follows the
-- Chromium project's published guidance, as ingress-nginx's does.
local INCOMPATIBLE_UA = {
    "Chrom[^ /]+/5[1-9][%.%s]",
    "Chrom[^ /]+/6[0-6][%.%s]",
    "UCBrowser/[0-9]%.",
    "UCBrowser/1[01]%.",
    "UCBrowser/12%.[0-9]%.",
    "UCBrowser/12%.1[0-2]%.",
    "%(iP.+; CPU .*OS 12[_%d]*.*%) AppleWebKit/",
    "%(Macintosh;.*Mac OS X 10_14[_%d]*.*%) AppleWebKit/.*Version/.* Safari/",
    "%(Macintosh;.*Mac OS X 10_14[_%d]*.*%) AppleWebKit/[%.%d]+ %(KHTML, like Gecko%)$",
}

function _M.samesite_none_compatible(user_agent)
    if type(user_agent) ~= "string" then
        return true
    end
    for _, pattern in ipairs(INCOMPATIBLE_UA) do
        if user_agent:find(pattern) then
            return false
        end
    end
    return true
end

-- The Set-Cookie line for value under cfg. Every part was checked in
-- cookie_config, and value comes from an MD5 hex digest.
function _M.cookie_line(cfg, value, user_agent)
    local parts = { cfg.name .. "=" .. value, "Path=" .. cfg.path }
    if cfg.domain then
        parts[#parts + 1] = "Domain=" .. cfg.domain
    end
    if cfg.expires then
        parts[#parts + 1] = "Expires=" .. http_time(ngx_time() + cfg.expires)
    end
    if cfg.maxage then
        parts[#parts + 1] = "Max-Age=" .. cfg.maxage
    end
    if cfg.secure then
        parts[#parts + 1] = "Secure"
    end
    parts[#parts + 1] = "HttpOnly"
    local samesite = cfg.samesite
    if samesite == "None" and cfg.conditional_samesite_none
            and not _M.samesite_none_compatible(user_agent) then
        samesite = nil
    end
    if samesite then
        parts[#parts + 1] = "SameSite=" .. samesite
    end
    return table.concat(parts, "; ")
end

-- Adds our Set-Cookie to the response, replacing one of ours set earlier in
-- this request and keeping every other Set-Cookie (the upstream's).
local function set_cookie(name, line)
    local existing = ngx.header["Set-Cookie"]
    local out = {}
    if type(existing) == "string" then
        existing = { existing }
    end
    local prefix = name .. "="
    for _, c in ipairs(existing or {}) do
        if c:sub(1, #prefix) ~= prefix then
            out[#out + 1] = c
        end
    end
    out[#out + 1] = line
    ngx.header["Set-Cookie"] = out
end

-- A cookie value we could have set: 32 lowercase hex digits. Anything else
-- is a new session.
local function cookie_value(name)
    local value = ngx_var["cookie_" .. name]
    if type(value) == "string" and #value == 32 and not value:find("[^0-9a-f]") then
        return value
    end
    return nil
end

-- Builds a sticky balancer class for a mode module.
function _M.class(mode)
    local class = {}
    local mt = { __index = class }

    function class.new(backend)
        local self = setmetatable({ mode = mode }, mt)
        self:sync(backend)
        return self
    end

    function class:sync(backend)
        self.name = backend.name
        self.endpoints = backend.endpoints
        self.cookie = _M.cookie_config(backend)
        -- Only change-on-failure sets a cookie after the balancer phase;
        -- without it this instance has no header_filter hook, so
        -- switchyard.balancer can skip that phase for every response.
        self.header_filter = self.cookie.change_on_failure and class.header_filter or false
        local signature = util.signature(backend.endpoints)
        if signature ~= self.signature then
            self.signature = signature
            mode.prepare(self, backend)
        end
    end

    -- The session's endpoint from its cookie, or a new one (with the cookie
    -- value to send).
    local function choose(self, attempt)
        local value = cookie_value(self.cookie.name)
        local index = value and mode.find(self, value)
        if index then
            return index
        end
        return mode.pick(self, attempt)
    end

    function class:rewrite(attempt)
        if #self.endpoints == 0 then
            return
        end
        local index, new_value = choose(self, attempt)
        attempt.sticky_index = index
        if new_value then
            set_cookie(self.cookie.name, _M.cookie_line(self.cookie, new_value, ngx_var.http_user_agent))
        end
    end

    function class:balance(attempt)
        local endpoints = self.endpoints
        if #endpoints == 0 then
            return nil
        end
        local index = attempt.sticky_index
        if attempt.tried then
            -- A retry. ingress-nginx's behaviour: without change-on-failure
            -- the session stays on its endpoint; with it, the session moves
            -- to one this request has not tried and keeps the new one.
            if self.cookie.change_on_failure then
                local value
                index, value = mode.pick(self, attempt)
                attempt.pending_cookie = { self.cookie, value }
            end
        elseif not index or not endpoints[index] then
            -- No rewrite hook ran (or the endpoints changed in between):
            -- still sticky for requests that carry a cookie, but a new
            -- session's cookie cannot be set from here.
            index = choose(self, attempt)
        end
        util.mark_tried(attempt, index)
        attempt.sticky_index = index
        return endpoints[index]
    end

    -- header_filter_by_lua: the cookie of a session that change-on-failure
    -- moved to another endpoint.
    function class:header_filter(attempt)
        local pending = attempt.pending_cookie
        if pending then
            set_cookie(pending[1].name, _M.cookie_line(pending[1], pending[2], ngx_var.http_user_agent))
        end
    end

    return class
end

return _M
