-- Backends in the switchyard_config shared dict, one key per backend, so a
-- change of one backend is written, and read by each worker, on its own.
--
-- Keys:
--   backends_version          version of the last publish, full or delta
--   backends_rev:<name>       the version whose value of <name> is current
--   backends:<rev>:b:<name>   the backend's JSON as published in <rev>
--   backends:<v>:changes      JSON array of the names version <v> added,
--                             changed or removed
--
-- A worker at version L that finds version V reads the change lists of
-- L+1..V and reloads only those names; when one is missing (pruned, or the
-- worker has loaded nothing yet, or the version changed too many to list)
-- it reloads everything it holds. A full publish writes, and lists, only
-- the backends that differ from the stored ones.
--
-- Why values are written under their version, as in snapshot.lua: when a
-- new value has a different size, ngx.shared.DICT:set frees the old value
-- before allocating the new one, so a "no memory" failure would lose the
-- backend in use. A publish writes every new value (and every new pointer)
-- first, with safe_set, and rolls them back on failure; only then does it
-- switch the existing pointers, numbers rewritten in place, which cannot
-- fail, and last the version. Superseded values are deleted afterwards.
--
-- A reader reads the version first, then the values, which may already be
-- newer; the change lists after the version it read bring it up to date.

local cjson = require("cjson.safe")
local snapshot = require("switchyard.util.snapshot")

local pairs = pairs
local ipairs = ipairs
local type = type
local tonumber = tonumber
local str_sub = string.sub
local str_match = string.match
local tbl_sort = table.sort
local tbl_concat = table.concat
local json_decode = cjson.decode
local json_encode = cjson.encode

-- new(kind) is such a store for another kind of named values under the
-- same rules (the routes of Lua-routed hosts: "routes"); kind must be a
-- plain word, it is a key prefix and a pattern.
local function new(kind)
    local _M = {}

    local KIND = kind
    local VERSION_KEY = snapshot.version_key(KIND)
    local REV_PREFIX = kind .. "_rev:"
    local REV_PREFIX_LEN = #REV_PREFIX
    -- Matches a value key, capturing its revision and name.
    local VALUE_PATTERN = "^" .. kind .. ":(%d+):b:(.*)$"
    -- Change lists kept: a worker further behind than this reloads
    -- everything it holds.
    _M.CHANGES_KEPT = 256
    -- A version that changes more backends than this has no change list:
    -- workers reload everything they hold, about as fast, and the dict is
    -- spared a list of every name (a start, a resync that found much
    -- changed).
    _M.CHANGES_MAX = 1000

    _M.ERR_STALE = "stale"
    _M.ERR_RACING = "racing"

    local function value_key(rev, name)
        return KIND .. ":" .. rev .. ":b:" .. name
    end

    local function changes_key(version)
        return KIND .. ":" .. version .. ":changes"
    end

    -- Current version, or nil when nothing was published yet; read where
    -- snapshot.read_version says, as every request does.
    function _M.version(dict)
        return snapshot.read_version(dict, VERSION_KEY)
    end

    -- Every backend name with its current revision, from the pointers in
    -- keys (a dict:get_keys(0) listing). get_keys(0) locks the dict while it
    -- lists it: only full publishes and the GET dump list it; workers read
    -- backends by name (balancer.lua builds one when a request asks).
    local function pointers(dict, keys)
        local revs = {}
        for _, key in ipairs(keys) do
            if str_sub(key, 1, REV_PREFIX_LEN) == REV_PREFIX then
                local rev = dict:get(key)
                if rev then
                    revs[str_sub(key, REV_PREFIX_LEN + 1)] = rev
                end
            end
        end
        return revs
    end

    -- The publish in progress: what was written, so it can be rolled back.
    local function new_publish(dict, version)
        return { dict = dict, version = version, values = {}, pointers = {}, changes = false }
    end

    local function rollback(p)
        local dict = p.dict
        for _, name in ipairs(p.pointers) do
            dict:delete(REV_PREFIX .. name)
        end
        for _, name in ipairs(p.values) do
            dict:delete(value_key(p.version, name))
        end
        if p.changes then
            dict:delete(changes_key(p.version))
        end
    end

    -- Stores the new values, and the pointers of names that have none yet
    -- (safe_set: they allocate). Returns nil and the error after a rollback.
    local function write_new(p, set, current)
        local dict = p.dict
        for name, json in pairs(set) do
            local ok, err = dict:safe_set(value_key(p.version, name), json)
            if not ok then
                rollback(p)
                return nil, err
            end
            p.values[#p.values + 1] = name
        end
        for name in pairs(set) do
            if not current[name] then
                local ok, err = dict:safe_set(REV_PREFIX .. name, p.version)
                if not ok then
                    rollback(p)
                    return nil, err
                end
                p.pointers[#p.pointers + 1] = name
            end
        end
        return true
    end

    -- Points every name of set at the new version, deletes the pointers and
    -- values of removed names, then makes the version visible, and finally
    -- frees the values it superseded. Nothing here allocates.
    local function switch(p, set, removed, current)
        local dict = p.dict
        local old = {}
        for name in pairs(set) do
            local rev = current[name]
            -- rev is the new version itself only for a pointer a publish that
            -- died half way left: its value is the one just written.
            if rev and rev ~= p.version then
                dict:set(REV_PREFIX .. name, p.version)
                old[#old + 1] = value_key(rev, name)
            end
        end
        for name in pairs(removed) do
            local rev = current[name]
            dict:delete(REV_PREFIX .. name)
            if rev then
                old[#old + 1] = value_key(rev, name)
            end
        end
        dict:set(VERSION_KEY, p.version)
        snapshot.copy_version(VERSION_KEY, p.version)
        for _, key in ipairs(old) do
            dict:delete(key)
        end
    end

    -- The version key must exist before a publish starts, so that making the
    -- version visible is an in-place write that cannot fail.
    local function ensure_version(dict)
        local version = dict:get(VERSION_KEY)
        if version then
            return version
        end
        local ok, err = dict:safe_add(VERSION_KEY, 0)
        if not ok and err ~= "exists" then
            return nil, err
        end
        return dict:get(VERSION_KEY) or 0
    end

    -- Deletes the values in keys (listed before the publish) that no pointer
    -- names: what a publish that died half way left behind.
    local function prune(dict, keys, final)
        for _, key in ipairs(keys) do
            local rev, name = str_match(key, VALUE_PATTERN)
            if rev and final[name] ~= tonumber(rev) then
                dict:delete(key)
            end
        end
    end

    -- Makes version current_version + 1 of changed (name -> JSON, added or
    -- replaced) and removed (name -> true), current being the revisions
    -- stored now of every name in them. The change list goes first, so a
    -- worker at an older version reloads only these names.
    local function commit(dict, current_version, changed, removed, current)
        local version = current_version + 1
        local names = {}
        for name in pairs(changed) do
            names[#names + 1] = name
        end
        for name in pairs(removed) do
            names[#names + 1] = name
        end
        local p = new_publish(dict, version)
        -- A leftover of a publish of this version that died half way.
        dict:delete(changes_key(version))
        if #names <= _M.CHANGES_MAX then
            local ok, err = dict:safe_set(changes_key(version), json_encode(names))
            if not ok then
                return nil, err
            end
            p.changes = true
        end
        local ok, err = write_new(p, changed, current)
        if not ok then
            return nil, err
        end
        switch(p, changed, removed, current)
        dict:delete(changes_key(version - _M.CHANGES_KEPT))
        return version
    end

    -- A full publish writes only the backends whose JSON differs from the
    -- stored one and removes the ones set lacks: workers then reload only
    -- those, as after a delta, and a resync that finds everything in place
    -- costs them nothing.
    local function publish_full_locked(dict, set)
        local current_version, err = ensure_version(dict)
        if not current_version then
            return nil, err
        end
        local keys = dict:get_keys(0)
        local current = pointers(dict, keys)
        local changed, removed = {}, {}
        for name, json in pairs(set) do
            local rev = current[name]
            if not rev or dict:get(value_key(rev, name)) ~= json then
                changed[name] = json
            end
        end
        for name in pairs(current) do
            if not set[name] then
                removed[name] = true
            end
        end
        local version, cerr = commit(dict, current_version, changed, removed, current)
        if not version then
            return nil, cerr
        end
        local final = current
        for name in pairs(changed) do
            final[name] = version
        end
        for name in pairs(removed) do
            final[name] = nil
        end
        prune(dict, keys, final)
        return version
    end

    local function publish_delta_locked(dict, base, set, removed)
        local current_version = dict:get(VERSION_KEY)
        if not current_version or current_version == 0 or current_version ~= base then
            return nil, _M.ERR_STALE, current_version or 0
        end
        local current = {}
        for name in pairs(set) do
            current[name] = dict:get(REV_PREFIX .. name)
        end
        for name in pairs(removed) do
            local rev = dict:get(REV_PREFIX .. name)
            if not rev then
                -- The sender believes in a backend this dict does not have.
                return nil, _M.ERR_STALE, current_version
            end
            current[name] = rev
        end
        return commit(dict, current_version, set, removed, current)
    end

    -- Publishes set (name -> backend JSON) as every backend there is. Returns
    -- the new version, or nil and an error as snapshot.publish.
    function _M.publish_full(dict, set)
        return snapshot.locked(dict, KIND, publish_full_locked, dict, set)
    end

    -- Publishes a delta on top of version base: set (name -> JSON) is added
    -- or replaced, removed (name -> true) deleted. Returns the new version, or
    -- nil, an error and the stored version: ERR_STALE when base is not the
    -- stored version or a removed name is not stored.
    function _M.publish_delta(dict, base, set, removed)
        return snapshot.locked(dict, KIND, publish_delta_locked, dict, base, set, removed)
    end

    -- Names changed by the deltas after version from up to version to, as a
    -- set, or nil when a worker at from must reload everything it holds
    -- instead.
    function _M.changes(dict, from, to)
        if not from or to <= from or to - from > _M.CHANGES_KEPT then
            return nil
        end
        local names = {}
        for v = from + 1, to do
            local data = dict:get(changes_key(v))
            local list = data and json_decode(data)
            if type(list) ~= "table" then
                return nil
            end
            for _, name in ipairs(list) do
                names[name] = true
            end
        end
        return names
    end

    -- The newest JSON of name, or false when it has no backend; nil and
    -- ERR_RACING when publishes kept freeing the value before it was read.
    function _M.read(dict, name)
        for _ = 1, 3 do
            local rev = dict:get(REV_PREFIX .. name)
            if not rev then
                return false
            end
            local json = dict:get(value_key(rev, name))
            if json then
                return json
            end
            -- Superseded and freed between the two reads: read the pointer
            -- again.
        end
        return nil, _M.ERR_RACING
    end

    -- Every backend (name -> JSON), or nil and ERR_RACING (the GET dump).
    -- What a publish running meanwhile changed may be read new or old.
    -- Never waiting for a quiet moment keeps a reader from starving while
    -- publishes keep coming.
    function _M.read_all(dict)
        local all = {}
        for name, rev in pairs(pointers(dict, dict:get_keys(0))) do
            local json = dict:get(value_key(rev, name))
            if not json then
                local err
                json, err = _M.read(dict, name)
                if json == nil then
                    return nil, err
                end
            end
            if json then
                all[name] = json
            end
        end
        return all
    end

    -- The stored backends as one JSON array sorted by name (GET).
    function _M.dump(dict)
        if not _M.version(dict) then
            return "[]"
        end
        for _ = 1, 3 do
            local all = _M.read_all(dict)
            if all then
                local names = {}
                for name in pairs(all) do
                    names[#names + 1] = name
                end
                tbl_sort(names)
                local parts = {}
                for i, name in ipairs(names) do
                    parts[i] = all[name]
                end
                return "[" .. tbl_concat(parts, ",") .. "]"
            end
        end
        return nil, _M.ERR_RACING
    end
    return _M
end

local backends = new("backends")
backends.new = new
return backends
