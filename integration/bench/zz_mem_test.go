package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

func rollup(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, k := range []string{"Rss:", "Pss:", "Pss_Anon:", "Pss_File:", "Anonymous:"} {
			if strings.HasPrefix(l, k) {
				out = append(out, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	return strings.Join(out, "; ")
}

func TestZZMem(t *testing.T) {
	requireBench(t)
	harness.Nginx(t)
	f := newFixture(t)
	n := scaleN(t)
	paddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	lua, _ := startLuaRoutedExtra(t, f, n, append([]string{"--profiling-addr", paddr}, strings.Fields(os.Getenv("ZZ_ARGS"))...)...)
	time.Sleep(25 * time.Second)
	pid := lua.Process.Cmd.Process.Pid
	t.Logf("controller: %s", rollup(pid))
	for _, c := range harness.ChildPIDs(t, pid) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
		t.Logf("child %d %q: %s", c, strings.ReplaceAll(string(cmd), "\x00", " "), rollup(c))
	}
	for _, p := range []string{"heap", "heap?debug=1"} {
		resp, err := http.Get("http://" + paddr + "/debug/pprof/" + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if p == "heap" {
			os.WriteFile("/tmp/zz_heap.pb.gz", b, 0o644)
		} else if i := strings.Index(string(b), "# runtime.MemStats"); i >= 0 {
			t.Logf("%s", string(b)[i:min(len(b), i+1800)])
		}
	}
}
