-- Per-request rules that depend on whether a host has TLS: ssl-redirect
-- and force-ssl-redirect (plain HTTP to HTTPS with http-redirect-code, 308 by default, chosen per
-- location), HSTS, and the from-to-www-redirect servers. They are decided here, from the
-- published certificates, rather than written into each server block, so
-- adding TLS to a host or removing it needs no NGINX reload.

local certificate = require("switchyard.certificate")
local tracing = require("switchyard.tracing")

local ngx = ngx
local ngx_var = ngx.var
local ngx_redirect = ngx.redirect
local byte, sub = string.byte, string.sub
local SLASH = byte("/")

local _M = {}

-- Set from init_by_lua with the controller settings (nginx.conf is
-- re-rendered, and NGINX reloaded, when they change). https_port is what
-- a redirect appends to the host (the applier's HTTPS port, "" for 443).
local config = { https_port = "", hsts = "", redirect_code = 308 }

function _M.configure(c)
    config = c
    config.redirect_code = c.redirect_code or 308
end

-- rewrite_by_lua, before the balancer: redirect plain HTTP to HTTPS
-- (ssl-redirect, force-ssl-redirect) or mark an HTTPS response for HSTS.
-- The renderer passes the location's choices, and for a server of one
-- exact name that name, as literals, so a request allocates nothing here
-- and reads no variable it can do without. Called without arguments it
-- behaves like a location without redirect annotations (ssl-redirect on)
-- and reads $host.
--
-- Every request of a proxied location runs this, so the common case, a
-- host without TLS and without force-ssl-redirect, is one shared dict read
-- (a number) and one table lookup: neither a redirect nor HSTS applies to
-- it, whatever the scheme.
function _M.rewrite(ssl_redirect, force_ssl_redirect, preserve_trailing_slash, host)
    -- Request tracing starts here, in every location's rewrite hook, so a
    -- redirected request has its span too (one comparison when off).
    tracing.rewrite()
    if ssl_redirect == nil then
        ssl_redirect = true
    end
    host = host or ngx_var.host
    local has_tls = certificate.configured_for_lower(host)
    if not has_tls and not force_ssl_redirect then
        return
    end
    local scheme = ngx_var.pass_access_scheme
    if scheme == "http" then
        -- As ingress-nginx's redirect_to_https: force-ssl-redirect always
        -- redirects, ssl-redirect only when the host has TLS (it has, or
        -- this returned above). Every data plane listens for HTTPS.
        if not (force_ssl_redirect or ssl_redirect) then
            return
        end
        local uri = ngx_var.request_uri
        -- ingress-nginx drops a trailing slash unless
        -- preserve-trailing-slash says otherwise.
        if not preserve_trailing_slash and byte(uri, -1) == SLASH then
            uri = sub(uri, 1, -2)
        end
        return ngx_redirect("https://" .. host .. config.https_port .. uri, config.redirect_code)
    end
    if has_tls and scheme == "https" and config.hsts ~= "" then
        -- add_header Strict-Transport-Security $switchyard_hsts always;
        ngx_var.switchyard_hsts = config.hsts
    end
end

-- rewrite_by_lua, after rewrite: a host with auth-tls-verify-client on
-- refuses a plain HTTP request that was not redirected to HTTPS, where no
-- client certificate can be checked (ingress-nginx serves it).
function _M.require_tls()
    if ngx_var.https ~= "on" then
        return ngx.exit(403)
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

-- The X-Request-ID of an auth request that does not share the request's
-- variables (auth-keepalive-share-vars off): the client's own header if it
-- sent one, else a new random id, as ingress-nginx's separate subrequest
-- gets. math.random is seeded per worker (balancer.init_worker).
function _M.auth_request_id()
    local sent = ngx.var.http_x_request_id
    if sent and sent ~= "" then
        return sent
    end
    local r = math.random
    return string.format("%08x%08x%08x%08x", r(0, 0xffffffff), r(0, 0xffffffff), r(0, 0xffffffff), r(0, 0xffffffff))
end

return _M
