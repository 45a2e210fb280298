-- Round-robin balancer for one backend, per worker.
--
-- Interface shared by all balancer implementations (see switchyard.balancer):
--   new(backend)             -> instance
--   instance:sync(backend)   takes a new endpoint list of the same backend,
--                            keeping whatever state still makes sense
--   instance:balance(attempt) -> endpoint ({address=, port=}) or nil
-- `attempt` is a per-request table that survives retries of that request;
-- an implementation may keep there what it picked before.
-- Optional, called by switchyard.balancer with the same per-request table:
--   instance:rewrite(attempt)        rewrite phase, before any balance();
--                                    may set response headers (sticky)
--   instance:header_filter(attempt)  header_filter_by_lua (sticky cookie
--                                    after change-on-failure)
--   instance:log(attempt)            log_by_lua (EWMA response times)
-- backend.upstreamHashByConfig and backend.sessionAffinityConfig are passed
-- as the controller sent them; an implementation checks what it uses.
-- backend.endpoints is an array of {address = string, port = number}.

local math_random = math.random
local setmetatable = setmetatable

local _M = {}
local mt = { __index = _M }

function _M.new(backend)
    local endpoints = backend.endpoints
    return setmetatable({
        endpoints = endpoints,
        -- Start each worker at a random endpoint so that workers (and a
        -- freshly restarted data plane) do not all hit the first one at once.
        position = #endpoints > 0 and math_random(#endpoints) - 1 or 0,
    }, mt)
end

-- The rotation position is kept: the modulo in balance() maps it onto the new
-- list, so an endpoint change does not send the next requests to endpoint 1.
function _M:sync(backend)
    self.endpoints = backend.endpoints
end

function _M:balance(attempt)
    local endpoints = self.endpoints
    local n = #endpoints
    if n == 0 then
        return nil
    end

    local index
    if attempt.index then
        -- A retry moves on from the endpoint this request just tried. The
        -- shared position may have been advanced by other requests in the
        -- meantime and could point right back at the failed endpoint.
        index = attempt.index % n + 1
    else
        index = self.position % n + 1
        self.position = index
    end
    attempt.index = index
    return endpoints[index]
end

return _M
