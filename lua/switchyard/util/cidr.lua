-- IPv4 and IPv6 addresses and CIDRs, for the source ranges of Lua-routed
-- hosts (router.lua): parse them as NGINX's allow and deny do, and match
-- an address against a CIDR by its prefix bits.
--
-- An address is kept as its bytes in network order, a 4-byte string for
-- IPv4 and a 16-byte one for IPv6; a CIDR as { bytes, bits } plus what
-- contains needs to compare it quickly (whole bytes, then one masked
-- byte). Parsing is strict: what the renderer writes (Go's netip prints
-- them) and what NGINX prints as $remote_addr, nothing looser, so a CIDR
-- router.lua's validate accepts means one thing only.

local bit = require("bit")

local band, lshift, rshift = bit.band, bit.lshift, bit.rshift
local str_byte, str_char, str_sub, str_find, str_match = string.byte, string.char, string.sub, string.find, string.match
local tbl_concat = table.concat
local tonumber = tonumber
local type = type

local _M = {}

-- decimal is s as a number from 0 to max, written without leading zeros
-- (as Go's netip and NGINX print it); nil otherwise.
local function decimal(s, max)
    if not str_find(s, "^%d%d?%d?$") or (#s > 1 and str_byte(s) == 48) then
        return nil
    end
    local n = tonumber(s)
    if n > max then
        return nil
    end
    return n
end

-- parse_v4 is a dotted quad's 4 bytes, or nil.
local function parse_v4(s)
    local a, b, c, d = str_match(s, "^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
    if not a then
        return nil
    end
    a, b, c, d = decimal(a, 255), decimal(b, 255), decimal(c, 255), decimal(d, 255)
    if not (a and b and c and d) then
        return nil
    end
    return str_char(a, b, c, d)
end

-- groups appends the 16-bit groups of part ("1:ab:0", or "") to out as two
-- bytes each; false when a group is not 1 to 4 hex digits.
local function groups(part, out)
    if part == "" then
        return true
    end
    local start = 1
    while true do
        local colon = str_find(part, ":", start, true)
        local g = str_sub(part, start, (colon or 0) - 1)
        if not str_find(g, "^%x%x?%x?%x?$") then
            return false
        end
        local n = tonumber(g, 16)
        out[#out + 1] = str_char(rshift(n, 8), band(n, 0xff))
        if not colon then
            return true
        end
        start = colon + 1
    end
end

-- parse_v6 is an IPv6 address's 16 bytes, or nil: eight groups, "::" once
-- for one or more zero groups, and optionally a dotted quad for the last
-- two (::ffff:10.1.2.3). No zone.
local function parse_v6(s)
    if #s < 2 or #s > 45 then
        return nil
    end
    local head, tail, want = s, nil, 16
    local last_colon = str_match(s, "^.*():")
    if not last_colon then
        return nil
    end
    if str_find(s, ".", last_colon, true) then
        tail = parse_v4(str_sub(s, last_colon + 1))
        if not tail then
            return nil
        end
        head, want = str_sub(s, 1, last_colon), 12
        if str_sub(head, -2) ~= "::" then
            head = str_sub(head, 1, -2)
        end
    end
    local left, right = {}, {}
    local gap = str_find(head, "::", 1, true)
    if gap then
        if not groups(str_sub(head, 1, gap - 1), left) or not groups(str_sub(head, gap + 2), right) then
            return nil
        end
        local zeros = want - 2 * (#left + #right)
        if zeros < 2 then
            return nil -- "::" stands for one zero group at least
        end
        left[#left + 1] = string.rep("\0", zeros)
        for _, g in ipairs(right) do
            left[#left + 1] = g
        end
    elseif not groups(head, left) or 2 * #left ~= want then
        return nil
    end
    left[#left + 1] = tail
    return tbl_concat(left)
end

-- parse_address is the bytes of an IPv4 or IPv6 address (4 or 16), or nil
-- for anything else ("unix:", a name, a zone).
function _M.parse_address(s)
    if type(s) ~= "string" then
        return nil
    end
    if str_find(s, ":", 1, true) then
        return parse_v6(s)
    end
    return parse_v4(s)
end

-- parse is the CIDR s ("10.0.0.0/8", "2001:db8::/32"; an address alone is
-- /32 or /128), or nil and why. Bits past the prefix must be zero: the
-- renderer writes CIDRs as netip masks them, and NGINX would only warn and
-- drop them.
function _M.parse(s)
    if type(s) ~= "string" then
        return nil, "not a string"
    end
    local addr, bits = str_match(s, "^([^/]+)/(%d+)$")
    if not addr then
        addr = s
    end
    local bytes = _M.parse_address(addr)
    if not bytes then
        return nil, "not an IPv4 or IPv6 address"
    end
    local max = #bytes * 8
    if bits then
        bits = decimal(bits, max)
        if not bits then
            return nil, "the prefix length is not 0 to " .. max
        end
    else
        bits = max
    end
    local whole, rest = math.floor(bits / 8), bits % 8
    local c = { bytes = bytes, bits = bits, whole = whole }
    if rest > 0 then
        c.mask = band(lshift(0xff, 8 - rest), 0xff)
        c.last = str_byte(bytes, whole + 1)
        if band(c.last, c.mask) ~= c.last then
            return nil, "bits past the prefix are set"
        end
    end
    local after = whole + (rest > 0 and 2 or 1)
    if after <= #bytes and str_find(str_sub(bytes, after), "[^%z]") then
        return nil, "bits past the prefix are set"
    end
    return c
end

-- contains says whether addr (parse_address's bytes) is in the CIDR c (a
-- parse result); never across families.
function _M.contains(c, addr)
    local bytes = c.bytes
    if #addr ~= #bytes then
        return false
    end
    local whole = c.whole
    if whole > 0 and str_sub(addr, 1, whole) ~= str_sub(bytes, 1, whole) then
        return false
    end
    return c.mask == nil or band(str_byte(addr, whole + 1), c.mask) == c.last
end

-- V4_MAPPED is the first 12 bytes of an IPv4-mapped IPv6 address,
-- ::ffff:a.b.c.d.
local V4_MAPPED = string.rep("\0", 10) .. "\255\255"

-- unmapped is the IPv4 address an IPv4-mapped IPv6 address carries, or nil.
function _M.unmapped(addr)
    if #addr == 16 and str_sub(addr, 1, 12) == V4_MAPPED then
        return str_sub(addr, 13)
    end
    return nil
end

return _M
