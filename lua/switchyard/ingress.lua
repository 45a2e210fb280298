-- Per-request rules that depend on whether a host has TLS: ssl-redirect
-- and force-ssl-redirect (plain HTTP to HTTPS with 308, chosen per
-- location), HSTS, and the from-to-www-redirect servers. They are decided here, from the
-- published certificates, rather than written into each server block, so
-- adding TLS to a host or removing it needs no NGINX reload.

local certificate = require("switchyard.certificate")

local ngx = ngx
local ngx_var = ngx.var
local ngx_redirect = ngx.redirect
local byte, sub = string.byte, string.sub
local SLASH = byte("/")

local _M = {}

-- Set from init_by_lua with the controller settings (nginx.conf is
-- re-rendered, and NGINX reloaded, when they change). https says whether
-- NGINX listens for HTTPS at all: without it there is nowhere to redirect.
local config = { https = true, https_port = "", hsts = "" }

function _M.configure(c)
    config = c
end

-- What a location without redirect annotations does.
local default_location = { ssl_redirect = true, force_ssl_redirect = false, preserve_trailing_slash = false }

-- Whether a plain HTTP request must go to HTTPS, as ingress-nginx's
-- redirect_to_https: force-ssl-redirect always does; ssl-redirect only
-- when the host has TLS.
local function redirect_to_https(loc, has_tls)
    if not config.https or ngx_var.pass_access_scheme ~= "http" then
        return false
    end
    if loc.force_ssl_redirect then
        return true
    end
    return loc.ssl_redirect and has_tls
end

-- rewrite_by_lua, before the balancer: redirect or mark for HSTS. loc is
-- the location's redirect choices, written by the renderer as a literal.
function _M.rewrite(loc)
    loc = loc or default_location
    local host = ngx_var.host
    local has_tls = certificate.configured_for(host)
    if redirect_to_https(loc, has_tls) then
        local uri = ngx_var.request_uri
        -- ingress-nginx drops a trailing slash unless
        -- preserve-trailing-slash says otherwise.
        if not loc.preserve_trailing_slash and byte(uri, -1) == SLASH then
            uri = sub(uri, 1, -2)
        end
        return ngx_redirect("https://" .. host .. config.https_port .. uri, 308)
    end
    if has_tls and ngx_var.pass_access_scheme == "https" and config.hsts ~= "" then
        -- add_header Strict-Transport-Security $switchyard_hsts always;
        ngx_var.switchyard_hsts = config.hsts
    end
end

-- from-to-www-redirect: the whole server redirects to host, with the
-- request's scheme, its port unless it is the scheme's default, and the
-- request URI.
function _M.redirect_to_host(host)
    local scheme = ngx_var.pass_access_scheme
    local port = ngx_var.pass_server_port
    local suffix = ""
    if (scheme == "http" and port ~= "80") or (scheme == "https" and port ~= "443") then
        suffix = ":" .. port
    end
    return ngx_redirect(scheme .. "://" .. host .. suffix .. ngx_var.request_uri, 308)
end

return _M
