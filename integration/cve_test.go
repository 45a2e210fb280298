package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// injectionCase is one hostile annotation value from a published
// ingress-nginx CVE. Every value carries a marker ("pwn" + a number) that
// must appear nowhere in the rendered configuration.
type injectionCase struct {
	name        string // the Ingress's name and host label
	cve         string
	annotations map[string]string
	marker      string
	// reject is what the Problem must say; empty means the Ingress is
	// served and the annotation only warned about (wantWarning).
	reject      string
	wantWarning string
}

const ann = "nginx.ingress.kubernetes.io/"

var injectionCases = []injectionCase{
	{
		name: "match-cn-quote", cve: "CVE-2025-1097", marker: "pwn1",
		annotations: map[string]string{
			ann + "auth-tls-secret":   "default/ca",
			ann + "auth-tls-match-cn": `CN=x"; } location /pwn1 { return 200 "pwned"; } #`,
		},
		reject: "auth-tls-match-cn: value",
	},
	{
		name: "match-cn-lua", cve: "CVE-2025-1097", marker: "pwn2",
		annotations: map[string]string{
			ann + "auth-tls-secret":   "default/ca",
			ann + "auth-tls-match-cn": `CN=$(content_by_lua_block{os.execute("pwn2")})`,
		},
		reject: "auth-tls-match-cn: value",
	},
	{
		// A regex that passes the pattern but could backtrack for seconds
		// on a client's subject (optional_no_ca lets anyone choose it).
		name: "match-cn-backtracking", cve: "CVE-2025-1097 (regex)", marker: "pwn3",
		annotations: map[string]string{
			ann + "auth-tls-secret":   "default/ca",
			ann + "auth-tls-match-cn": `CN=(a+)+pwn3`,
		},
		reject: "exponential time",
	},
	{
		name: "mirror-target", cve: "CVE-2025-1098", marker: "pwn4",
		annotations: map[string]string{ann + "mirror-target": `https://m.example.com/pwn4"; load_module /tmp/pwn4.so; #`},
		reject:      "mirror-target: value",
	},
	{
		name: "mirror-target-subshell", cve: "CVE-2025-1098", marker: "pwn5",
		annotations: map[string]string{ann + "mirror-target": `http://$(curl pwn5.example.com)`},
		reject:      "mirror-target: value",
	},
	{
		name: "mirror-host-newline", cve: "CVE-2025-1098", marker: "pwn6",
		annotations: map[string]string{ann + "mirror-host": "m.example.com\nlua_shared_dict pwn6 1m;"},
		reject:      "line break",
	},
	{
		name: "mirror-host-brace", cve: "CVE-2025-1098", marker: "pwn7",
		annotations: map[string]string{ann + "mirror-host": `m.example.com; } server { listen 9; location /pwn7 {`},
		reject:      "mirror-host: value",
	},
	{
		// The client must never choose where mirrored requests go (SSRF):
		// the host of mirror-target is literal.
		name: "mirror-target-client-host", cve: "CVE-2025-1098 (SSRF)", marker: "pwn8",
		annotations: map[string]string{ann + "mirror-target": "https://$http_host/pwn8"},
		reject:      "mirror-target: value",
	},
	{
		// modsecurity-transaction-id is written into the location, quoted;
		// only whole request variables may appear in it.
		name: "modsecurity-transaction-id", cve: "CVE-2025-1098 class", marker: "pwn81",
		annotations: map[string]string{ann + "enable-modsecurity": "true", ann + "modsecurity-transaction-id": `x"; load_module /tmp/pwn81.so; #`},
		reject:      "modsecurity-transaction-id: value",
	},
	{
		name: "modsecurity-transaction-id-brace", cve: "CVE-2025-1098 class", marker: "pwn82",
		annotations: map[string]string{ann + "enable-modsecurity": "true", ann + "modsecurity-transaction-id": `${request_id}}; location /pwn82 {`},
		reject:      "modsecurity-transaction-id: value",
	},
	{
		name: "modsecurity-snippet", cve: "CVE-2021-25742 class", marker: "pwn83",
		annotations: map[string]string{ann + "enable-modsecurity": "true", ann + "modsecurity-snippet": "SecRuleEngine Off\nInclude /etc/pwn83.conf"},
		reject:      "modsecurity-snippet",
	},
	{
		name: "configuration-snippet", cve: "CVE-2021-25742", marker: "pwn9",
		annotations: map[string]string{ann + "configuration-snippet": `content_by_lua_block { ngx.say(io.open("/var/run/secrets/pwn9"):read("*a")) }`},
		reject:      "configuration-snippet",
	},
	{
		name: "server-snippet", cve: "CVE-2023-5044", marker: "pwn10",
		annotations: map[string]string{ann + "server-snippet": "load_module /tmp/pwn10.so;\nlua_code_cache off;"},
		reject:      "server-snippet",
	},
}

// authInjectionCases is where the auth plugin's engineer adds the auth
// classes (auth-url CVE-2025-24514, auth secret file path CVE-2025-24513,
// auth-proxy-set-headers CVE-2025-15566): same shape, same assertions.
var authInjectionCases = []injectionCase{
	{
		// Variables are allowed in auth-url, but only whole allowed tokens:
		// a quote after one still cannot end the string.
		name: "auth-url-variable-quote", cve: "CVE-2025-24514", marker: "pwn21",
		annotations: map[string]string{ann + "auth-url": `http://$host/a"; location /pwn21 { return 200; } #`},
		reject:      "auth-url: value",
	},
	{
		name: "auth-url-variable-lua", cve: "CVE-2025-24514", marker: "pwn22",
		annotations: map[string]string{ann + "auth-url": `http://127.0.0.1/$pwn22`},
		reject:      "auth-url: value",
	},
	{
		name: "auth-signin-variable-brace", cve: "CVE-2025-24514", marker: "pwn23",
		annotations: map[string]string{ann + "auth-url": "http://127.0.0.1/a", ann + "auth-signin": `https://${host}/pwn23`},
		reject:      "auth-signin: value",
	},
	{
		name: "auth-request-redirect-variable", cve: "CVE-2025-24514", marker: "pwn24",
		annotations: map[string]string{ann + "auth-url": "http://127.0.0.1/a", ann + "auth-request-redirect": `$request_uri;pwn24`},
		reject:      "auth-request-redirect: value",
	},
}

// backendInjectionCases are the backend plugin's Medium-or-higher
// annotations (and backend-protocol) with NGINX syntax in their values.
var backendInjectionCases = []injectionCase{
	{
		name: "proxy-ssl-name-quote", cve: "injection", marker: "pwn61",
		annotations: map[string]string{ann + "backend-protocol": "HTTPS", ann + "proxy-ssl-name": `x"; location /pwn61 { return 200; } #`},
		reject:      "proxy-ssl-name: value",
	},
	{
		name: "proxy-ssl-ciphers-quote", cve: "injection", marker: "pwn62",
		annotations: map[string]string{ann + "backend-protocol": "HTTPS", ann + "proxy-ssl-ciphers": `HIGH"; pwn62 on; #`},
		reject:      "proxy-ssl-ciphers: value",
	},
	{
		name: "proxy-ssl-secret-path", cve: "CVE-2025-24513", marker: "pwn63",
		annotations: map[string]string{ann + "backend-protocol": "HTTPS", ann + "proxy-ssl-secret": `../../pwn63`},
		reject:      "proxy-ssl-secret: value",
	},
	{
		name: "fastcgi-index-quote", cve: "injection", marker: "pwn64",
		annotations: map[string]string{ann + "backend-protocol": "FCGI", ann + "fastcgi-index": `index.php"; pwn64 on; #`},
		reject:      "fastcgi-index: value",
	},
	{
		name: "backend-protocol-semicolon", cve: "injection", marker: "pwn65",
		annotations: map[string]string{ann + "backend-protocol": `GRPC; pwn65`},
		reject:      "backend-protocol: value",
	},
}

// TestCVEInjectionRejected feeds values from ingress-nginx's injection
// CVEs through the real binary: each Ingress is rejected (or, for a valid
// but ignored annotation, served with a warning), the reason is reported
// naming the annotation, nothing of any value reaches the rendered
// configuration, and an ordinary Ingress in the same run keeps being
// served. It runs once with snippets off (the default) and once with
// allow-snippet-annotations on, where Switchyard still renders no snippet.
func TestCVEInjectionRejected(t *testing.T) {
	cases := append(append(slices.Clone(injectionCases), authInjectionCases...), backendInjectionCases...)
	bin := harness.Binary(t)
	e := &env{t: t, dir: t.TempDir()}
	e.portA = harness.StartEcho(t, bin, "echo-a", "a-1")
	e.write("class.yaml", harness.ClassYAML)
	e.write("services.yaml", harness.ServiceYAML("default", "echo-a", e.portA))
	e.write("good.yaml", annotatedIngressYAML("good", map[string]string{ann + "upstream-vhost": "backend.example.com"}))
	for _, c := range cases {
		e.write(c.name+".yaml", annotatedIngressYAML(c.name, c.annotations))
	}
	e.write("config.yaml", configMapYAML(map[string]string{"allow-snippet-annotations": "false"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	check := func(phase, snippetReason string) {
		e.eventually("good.example.com", "/", phase+": the ordinary Ingress", servedBy("a-1"))
		harness.WaitFor(t, changeTimeout, phase+": every problem reported", func() error {
			problems := problemsLogged(t, e.sy.Output.String())
			for _, c := range cases {
				want := c.reject
				if want == "" {
					want = c.wantWarning
				}
				if strings.HasSuffix(c.name, "snippet") {
					want = snippetReason
				}
				if !slices.ContainsFunc(problems["default/"+c.name], func(m string) bool { return strings.Contains(m, want) }) {
					return fmt.Errorf("%s (%s): no problem saying %q in %q", c.name, c.cve, want, problems["default/"+c.name])
				}
			}
			return nil
		})
		for _, c := range cases {
			r, err := e.sy.Get(c.name+".example.com", "/")
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if c.reject != "" && r.Status != 404 {
				t.Errorf("%s: %s (%s) answered %d: a rejected Ingress must not be served", phase, c.name, c.cve, r.Status)
			}
			if c.reject == "" && (r.Status != 200 || r.Echo == nil || r.Echo.Pod != "a-1") {
				t.Errorf("%s: %s answered %d: an ignored annotation must leave the Ingress served", phase, c.name, r.Status)
			}
		}
		assertNoMarkers(t, phase+": state dir and data plane", readState(t, e.sy), cases)
	}

	check("snippets off", "snippet annotations are off")

	// Allowing snippets does not make Switchyard render one.
	e.write("config.yaml", configMapYAML(map[string]string{"allow-snippet-annotations": "true"}))
	check("snippets allowed", "Switchyard does not render snippets")

	// `switchyard render` shows the same: nothing of the values.
	// Only the rendered output (stdout): the Problems on stderr quote
	// values cut short, as log lines and Events do.
	render := exec.Command(bin, "render", "--manifests", e.dir, "--configmap", configMapName)
	var stderr strings.Builder
	render.Stderr = &stderr
	out, err := render.Output()
	if err != nil {
		t.Fatalf("render: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(string(out), "good.example.com") {
		t.Fatalf("render output lacks the ordinary Ingress:\n%s", truncate(out))
	}
	assertNoMarkers(t, "switchyard render", map[string]string{"render": string(out)}, cases)
}

// annotatedIngressYAML is an Ingress of host <name>.example.com to echo-a
// with annotations; values are written as JSON strings, which YAML reads
// as double-quoted scalars, so any byte survives.
func annotatedIngressYAML(name string, annotations map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: %s\n  namespace: default\n  annotations:\n", name)
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		v, _ := json.Marshal(annotations[k])
		fmt.Fprintf(&b, "    %s: %s\n", k, v)
	}
	fmt.Fprintf(&b, `spec:
  ingressClassName: switchyard
  rules:
  - host: %s.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: echo-a, port: {name: http}}}}
`, name)
	return b.String()
}

// problemsLogged returns the messages of the "ingress problem" log lines
// by Ingress; a line is JSON, or console format with the fields as JSON
// after the message.
func problemsLogged(t *testing.T, output string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg, Ingress, Field, Reason, Message string
		}
		text := sc.Text()
		if _, fields, ok := strings.Cut(text, "\tingress problem\t"); ok {
			text, line.Msg = fields, "ingress problem"
		}
		if json.Unmarshal([]byte(text), &line) != nil || line.Msg != "ingress problem" {
			continue
		}
		out[line.Ingress] = append(out[line.Ingress], line.Field+": "+line.Reason+": "+line.Message)
	}
	return out
}

// readTree returns the text files below dir (the rendered configuration,
// the payloads the applier keeps), by path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file NGINX removed meanwhile
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err == nil {
			files[path] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// readState is what a Switchyard serves from: the files below its NGINX
// prefix, and the routes and backends its Lua holds (a Lua-routed host has
// no file), these by "lua:<path>". It fails when none of it names the
// ordinary Ingress's host: then it is not the configuration served.
func readState(t *testing.T, sy *harness.Switchyard) map[string]string {
	t.Helper()
	state := readTree(t, sy.Prefix())
	for _, path := range []string{"/configuration/routes", "/configuration/backends"} {
		state["lua:"+path] = sy.DataPlane(t, path)
	}
	if !slices.ContainsFunc(slices.Collect(maps.Values(state)), func(s string) bool { return strings.Contains(s, "good.example.com") }) {
		t.Fatalf("nothing below %s nor in its Lua holds the ordinary Ingress's host: not the configuration served", sy.Prefix())
	}
	return state
}

func assertNoMarkers(t *testing.T, where string, files map[string]string, cases []injectionCase) {
	t.Helper()
	for path, content := range files {
		for _, c := range cases {
			// "pwn1" is a prefix of "pwn10": match the marker as a word.
			for i := strings.Index(content, c.marker); i >= 0; {
				end := i + len(c.marker)
				if end == len(content) || content[end] < '0' || content[end] > '9' {
					t.Errorf("%s: %s holds %s's value (%s, marker %s)", where, path, c.name, c.cve, c.marker)
					break
				}
				next := strings.Index(content[end:], c.marker)
				if next < 0 {
					break
				}
				i = end + next
			}
		}
	}
}
