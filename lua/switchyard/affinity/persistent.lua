-- Sticky sessions, affinity-mode "persistent": the cookie holds a hash of
-- the endpoint (MD5 of the backend name and "address:port", so it tells
-- nothing about the address), and a session stays on its endpoint for as
-- long as that endpoint exists, however the others change. A session whose
-- endpoint is gone gets a new random endpoint and a new cookie.
-- See switchyard.affinity.sticky for the common part.

local sticky = require("switchyard.affinity.sticky")
local util = require("switchyard.util.endpoints")

local md5 = ngx.md5

local mode = {}

function mode.prepare(self, backend)
    local by_hash, hashes = {}, {}
    for i, key in ipairs(util.endpoint_keys(backend.endpoints)) do
        -- Salted with the backend name so that the same pod behind two
        -- Services gets different cookie values.
        local h = md5(backend.name .. "|" .. key)
        by_hash[h] = i
        hashes[i] = h
    end
    self.by_hash, self.hashes = by_hash, hashes
end

function mode.find(self, value)
    return self.by_hash[value]
end

function mode.pick(self, attempt)
    local all = {}
    for i = 1, #self.endpoints do
        all[i] = i
    end
    local index = util.random_untried(all, attempt)
    return index, self.hashes[index]
end

return sticky.class(mode)
