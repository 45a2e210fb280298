-- Versioned configuration snapshots in an ngx.shared dict.
--
-- A snapshot of one kind ("backends", "certificates") is a set of keys named
-- "<kind>:<version>:<part>", made visible by a single final write of
-- "<kind>_version". Readers read the version first and then only keys of that
-- version, so they never mix two snapshots.
--
-- Why not overwrite one key in place: when a new value has a different size,
-- ngx.shared.DICT:set frees the old value before allocating the new one, so a
-- "no memory" failure would lose the configuration that is still in use.
-- Writing the new version next to the current one means a failed publish
-- leaves the current snapshot intact, also for workers that start later.
--
-- The previous snapshot is kept until the next publish, so a reader that read
-- the version just before a flip still finds that version's keys.

local ngx = ngx
local ngx_log = ngx.log
local ERR = ngx.ERR
local pcall = pcall
local pairs = pairs
local tonumber = tonumber
local str_match = string.match

local _M = {}

-- Upper bound for holding the publish lock; it is released explicitly, the
-- expiry only matters if a worker dies in the middle of a publish.
local LOCK_TTL = 30

_M.ERR_BUSY = "busy"

function _M.version_key(kind)
    return kind .. "_version"
end

-- Every request reads the versions (has anything changed since this
-- worker loaded it?). The dicts that hold the values grow with the
-- cluster, to tens of thousands of keys at 10,000 Ingresses, and a lookup
-- there costs more the more keys there are; so each publish also writes
-- its version to switchyard_versions, which holds only these few keys, and
-- the per-request reads go there. The value dict's key stays the one
-- publishes compare with; the copy is written after it, so a reader that
-- sees a version finds its values. Without that dict (a configuration
-- that does not declare it), or before a first publish copied anything,
-- reads go to the value dict.
local versions = ngx.shared.switchyard_versions

-- read_version is the version under key, for a per-request check.
function _M.read_version(dict, key)
    if versions then
        local version = versions:get(key)
        if version then
            return version
        end
    end
    return dict:get(key)
end

-- copy_version writes version to switchyard_versions after the value
-- dict's key was set to it. A failure only leaves reads one publish
-- behind until the next: logged.
function _M.copy_version(key, version)
    if not versions then
        return
    end
    local ok, err = versions:safe_set(key, version)
    if not ok then
        ngx_log(ERR, "switchyard: copying ", key, " to switchyard_versions: ", err)
    end
end

function _M.key(kind, version, part)
    return kind .. ":" .. version .. ":" .. part
end

-- Current version of kind, or nil when nothing was published yet.
function _M.version(dict, kind)
    return _M.read_version(dict, kind .. "_version")
end

-- Deletes every key of kind that does not belong to version `keep`, including
-- leftovers of a publish that died half way.
local function prune(dict, kind, keep)
    local pattern = "^" .. kind .. ":(%d+):"
    -- get_keys(0) locks the dict while it lists it; these dicts only hold a
    -- few keys per certificate/snapshot and publishing is rare.
    for _, key in pairs(dict:get_keys(0)) do
        local version = tonumber(str_match(key, pattern))
        if version and version ~= keep then
            dict:delete(key)
        end
    end
end

local function delete_parts(dict, kind, version, written)
    for i = 1, #written do
        dict:delete(_M.key(kind, version, written[i]))
    end
end

local function publish_locked(dict, kind, parts)
    local current = dict:get(kind .. "_version") or 0
    -- Make room first: only the snapshot in use may stay next to the new one.
    prune(dict, kind, current)

    local version = current + 1
    local written = {}
    for part, value in pairs(parts) do
        -- safe_set never evicts other keys (which could be the snapshot in
        -- use); it fails with "no memory" instead.
        local ok, err = dict:safe_set(_M.key(kind, version, part), value)
        if not ok then
            delete_parts(dict, kind, version, written)
            return nil, err
        end
        written[#written + 1] = part
    end

    local ok, err = dict:safe_set(kind .. "_version", version)
    if not ok then
        delete_parts(dict, kind, version, written)
        return nil, err
    end
    _M.copy_version(kind .. "_version", version)
    return version
end

-- Runs fn(...) holding kind's publish lock, which is shared by every
-- worker. Returns what fn returns, or nil and ERR_BUSY when another
-- publish of kind is running, or nil and "internal error" when fn raised.
function _M.locked(dict, kind, fn, ...)
    local lock = kind .. "_lock"
    local ok, err = dict:safe_add(lock, true, LOCK_TTL)
    if not ok then
        if err == "exists" then
            return nil, _M.ERR_BUSY
        end
        return nil, err
    end

    local pok, a, b, c = pcall(fn, ...)
    dict:delete(lock)
    if not pok then
        ngx_log(ERR, "switchyard: publishing ", kind, " failed: ", a)
        return nil, "internal error"
    end
    return a, b, c
end

-- Publishes parts (a table part name -> string) as the next version of kind.
-- Returns the new version, or nil and an error: ERR_BUSY when another publish
-- of the same kind is running (possibly in another worker), "no memory" when
-- the dict is full, anything else for unexpected failures.
function _M.publish(dict, kind, parts)
    return _M.locked(dict, kind, publish_locked, dict, kind, parts)
end

return _M
