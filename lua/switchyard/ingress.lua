-- Per-request rules that depend on whether a host has TLS: ssl-redirect
-- (plain HTTP to HTTPS with 308) and HSTS. They are decided here, from the
-- published certificates, rather than written into each server block, so
-- adding TLS to a host or removing it needs no NGINX reload.

local certificate = require("switchyard.certificate")

local ngx = ngx
local ngx_var = ngx.var
local ngx_redirect = ngx.redirect

local _M = {}

-- Set from init_by_lua with the controller settings (nginx.conf is
-- re-rendered, and NGINX reloaded, when they change).
local config = { ssl_redirect = true, https_port = "", hsts = "" }

function _M.configure(c)
    config = c
end

-- rewrite_by_lua, before the balancer: redirect or mark for HSTS.
function _M.rewrite()
    local host = ngx_var.host
    if not certificate.configured_for(host) then
        return
    end
    if ngx_var.pass_access_scheme == "https" then
        if config.hsts ~= "" then
            -- add_header Strict-Transport-Security $switchyard_hsts always;
            ngx_var.switchyard_hsts = config.hsts
        end
        return
    end
    if config.ssl_redirect then
        return ngx_redirect("https://" .. host .. config.https_port .. ngx_var.request_uri, 308)
    end
end

return _M
