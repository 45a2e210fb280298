package translator

import (
	"strings"

	"switchyard.dev/switchyard/bus"
)

var nginxSettingsCases = map[string]keyCases{
	"default-type": stringCases("text/html", func(s *bus.Settings) *string { return &s.DefaultType },
		[]string{"text/html", "application/octet-stream", "application/vnd.api+json"}, []string{"text", "text/html;", "text/html charset", `"text/html"`}),
	"debug-connections": keyCases{def: "",
		valid: []valid{
			{"", setDebugConnections(nil)},
			{"127.0.0.1", setDebugConnections([]string{"127.0.0.1"})},
			{" 10.0.0.5 , 192.168.1.77/24,fd00::/8,2001:db8::1 ", setDebugConnections([]string{"10.0.0.5", "192.168.1.0/24", "fd00::/8", "2001:db8::1"})},
			{"10.0.0.5,10.0.0.5", setDebugConnections([]string{"10.0.0.5"})},
		},
		invalid: []string{"localhost", "10.0.0.5,", ",", "10.0.0.5;", "10.0.0.0/33", "fe80::1%eth0", "unix:", "all", "10.0.0.5 10.0.0.6",
			strings.Repeat("10.0.0.1,", 64) + "10.0.0.2"},
	},
	"disable-ipv6-dns":               boolCases(false, func(s *bus.Settings) *bool { return &s.DisableIPv6DNS }),
	"disable-ipv6":                   boolCases(false, func(s *bus.Settings) *bool { return &s.DisableIPv6 }),
	"enable-underscores-in-headers":  boolCases(false, func(s *bus.Settings) *bool { return &s.EnableUnderscoresInHeaders }),
	"ignore-invalid-headers":         boolCases(true, func(s *bus.Settings) *bool { return &s.IgnoreInvalidHeaders }),
	"map-hash-bucket-size":           intCases("64", func(s *bus.Settings) *int { return &s.MapHashBucketSize }, []int{32, 64, 128}, []string{"16", "65537"}),
	"proxy-headers-hash-bucket-size": intCases("64", func(s *bus.Settings) *int { return &s.ProxyHeadersHashBucketSize }, []int{32, 64, 256}, []string{"0", "65537"}),
	"proxy-headers-hash-max-size":    intCases("512", func(s *bus.Settings) *int { return &s.ProxyHeadersHashMaxSize }, []int{32, 512, 1024}, []string{"0", "1048577"}),
	"limit-rate":                     intCases("0", func(s *bus.Settings) *int { return &s.LimitRate }, []int{0, 1024, 1048576}, []string{"-1", "1k"}),
	"limit-rate-after":               intCases("0", func(s *bus.Settings) *int { return &s.LimitRateAfter }, []int{0, 4096, 1048576}, []string{"-1", "1m"}),
	"allow-backend-server-header":    boolCases(false, func(s *bus.Settings) *bool { return &s.AllowBackendServerHeader }),
	"enable-multi-accept":            boolCases(true, func(s *bus.Settings) *bool { return &s.EnableMultiAccept }),
	"error-log-level": {def: "notice",
		valid:   []valid{{"warn", setString(func(s *bus.Settings) *string { return &s.ErrorLogLevel }, "warn")}},
		invalid: []string{"", "verbose", "warn;"},
	},
	"error-log-path": {def: "",
		valid: []valid{
			{"/var/log/nginx/error.log", setString(errorLogPathField, "/var/log/nginx/error.log")},
			{"", setString(errorLogPathField, "")},
		},
		invalid: []string{"error.log", "/var/log/../etc/shadow", "/var/log/a b", "/var/log/a;", "syslog:server=x", "/var/log/$host.log"},
	},
	"worker-cpu-affinity": {def: "",
		valid: []valid{
			{"auto", setString(func(s *bus.Settings) *string { return &s.WorkerCPUAffinity }, "auto")},
			{"0101 1010", setString(func(s *bus.Settings) *string { return &s.WorkerCPUAffinity }, "0101 1010")},
		},
		invalid: []string{"all", "0102", "auto;"},
	},
	"generate-request-id":  boolCases(true, func(s *bus.Settings) *bool { return &s.GenerateRequestID }),
	"retry-non-idempotent": boolCases(false, func(s *bus.Settings) *bool { return &s.RetryNonIdempotent }),
}

func setDebugConnections(want []string) func(*bus.Settings) {
	return func(s *bus.Settings) { s.DebugConnections = want }
}

func errorLogPathField(s *bus.Settings) *string { return &s.ErrorLogPath }
