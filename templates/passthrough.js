// Switchyard's TLS passthrough endpoints (templates/passthrough.js), run by
// NGINX's stream module through njs (Debian's libnginx-mod-stream-js) with
// --enable-ssl-passthrough. The applier keeps one file per passthrough
// host in $switchyard_passthrough_dir, named by the lower-case host name
// and holding its ready endpoints, "ip:port" one a line; an endpoint change
// rewrites the file (atomically) and never reloads NGINX. njs 0.7 runs each
// connection in a fresh VM, so nothing is cached: every passthrough
// connection reads its host's file once.
import fs from 'fs';

// Connections with no endpoint go here, an upstream whose only server is
// down: NGINX closes them.
var NONE = 'switchyard_passthrough_none';

// A host name as the renderer accepts one for passthrough (bus
// PassthroughHostPattern): never a path, never "." or "..".
var HOST = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

// An endpoint as the applier writes it: an IPv4 or bracketed IPv6 address
// and a port.
var ENDPOINT = /^([0-9.]+|\[[0-9a-f:.]+\]):[0-9]{1,5}$/;

// backend is $switchyard_passthrough_backend: one of the endpoints of the
// SNI name's passthrough host, picked at random, or NONE.
function backend(s) {
    var name = s.variables.ssl_preread_server_name;
    if (!name || name.length > 253) {
        return NONE;
    }
    name = name.toLowerCase();
    if (!HOST.test(name)) {
        return NONE;
    }
    var text;
    try {
        text = fs.readFileSync(s.variables.switchyard_passthrough_dir + '/' + name, 'utf8');
    } catch (e) {
        return NONE; // not a passthrough host (any more)
    }
    var endpoints = text.split('\n').filter(function (line) { return ENDPOINT.test(line); });
    if (endpoints.length === 0) {
        return NONE;
    }
    return endpoints[Math.floor(Math.random() * endpoints.length)];
}

export default {backend};
