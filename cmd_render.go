package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/tools/txtar"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/stages/renderer"
)

// renderCommand runs the same pipeline as `run`, up to the renderer, on an
// embedded bus, and prints what the applier would receive: every file, then
// the Lua payloads. Nothing derived from a Secret is printed: certificates
// are shown by host only (their PEM holds private keys), and files rendered
// from Secrets (htpasswd hashes) by their size only.
func renderCommand(args []string) error {
	var o options
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	o.register(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	strict := fs.Bool("strict", false, "exit non-zero when any Ingress is rejected or served degraded (with a Problem)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.manifests == "" {
		return errors.New("--manifests DIR is required")
	}
	o.logLevel = "error"
	stages := []string{bus.StageWatcher, bus.StageTranslator, bus.StageAnnotations, bus.StageRenderer}
	var annotated map[string][]byte
	err := pipelineOnce(&o, *timeout, stages, func(rendered map[string][]byte) error {
		archive, err := renderArchive(rendered)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(archive)
		return err
	}, func(ctx context.Context, conn *bus.Conn) error {
		// The annotations stage's table holds every Ingress with its
		// Problems, at least as new as what was rendered.
		var err error
		annotated, _, err = bus.ReadTable(ctx, conn, bus.StageAnnotations)
		if err != nil {
			return fmt.Errorf("read the Ingresses' problems: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	report, err := problemReport(annotated, o.configMap)
	if err != nil {
		return err
	}
	fmt.Fprint(os.Stderr, report.text)
	if *strict && (report.rejected > 0 || report.degraded > 0) {
		return fmt.Errorf("--strict: %d Ingress(es) rejected, %d served degraded", report.rejected, report.degraded)
	}
	return nil
}

// renderReport is every Problem of the rendered state, one line each.
type renderReport struct {
	text               string
	rejected, degraded int // Ingresses
}

// problemReport lists the Problems of every Ingress (rejected, or served
// degraded: with a Problem) and of the controller ConfigMap, sorted, as
// "kind namespace/name: field: reason: message". Messages quote values only
// cut short, as in log lines and Events.
func problemReport(entries map[string][]byte, configMap string) (renderReport, error) {
	var r renderReport
	var b strings.Builder
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		kind, _, err := bus.SplitKey(key)
		if err != nil {
			return r, err
		}
		switch {
		case kind == bus.KindIngress:
			var info bus.IngressInfo
			if err := json.Unmarshal(entries[key], &info); err != nil {
				return r, fmt.Errorf("decode %s: %w", key, err)
			}
			if len(info.Problems) == 0 {
				continue
			}
			verdict := "served degraded"
			if info.Rejected {
				verdict = "rejected"
				r.rejected++
			} else {
				r.degraded++
			}
			for _, p := range info.Problems {
				fmt.Fprintf(&b, "ingress %s/%s (%s): %s: %s: %s\n", info.Namespace, info.Name, verdict, p.Field, p.Reason, p.Message)
			}
		case key == bus.SettingsKey:
			var s bus.Settings
			if err := json.Unmarshal(entries[key], &s); err != nil {
				return r, fmt.Errorf("decode %s: %w", key, err)
			}
			for _, p := range s.Problems {
				fmt.Fprintf(&b, "configmap %s: %s: %s: %s\n", configMap, p.Field, p.Reason, p.Message)
			}
		}
	}
	r.text = b.String()
	return r, nil
}

func renderArchive(entries map[string][]byte) ([]byte, error) {
	var files []txtar.File
	var backends, routes, passthrough []json.RawMessage
	certHosts := map[string][]string{}
	split := bus.NewFileAssembler()
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		if isPart, err := split.Update(key, entries[key], true); err != nil {
			return nil, err
		} else if isPart {
			continue
		}
		kind, parts, err := bus.SplitKey(key)
		if err != nil {
			return nil, err
		}
		switch kind {
		case bus.KindFile:
			var f bus.RenderedFile
			if err := json.Unmarshal(entries[key], &f); err != nil {
				return nil, err
			}
			if f.Parts == 0 {
				files = append(files, txtar.File{Name: f.Path, Data: []byte(printable(f))})
			}
		case bus.KindBackend:
			backends = append(backends, entries[key])
		case bus.KindRoute:
			routes = append(routes, entries[key])
		case bus.KindPassthrough:
			passthrough = append(passthrough, entries[key])
		case bus.KindCertificate:
			var c struct{ Hosts []string }
			if err := json.Unmarshal(entries[key], &c); err != nil {
				return nil, err
			}
			certHosts[parts[0]+"/"+parts[1]] = c.Hosts
		}
	}
	var joinErr error
	split.Assemble(func(path, content string, err error) {
		joinErr = errors.Join(joinErr, err)
		files = append(files, txtar.File{Name: path, Data: []byte(printable(bus.RenderedFile{Path: path, Content: content}))})
	})
	if joinErr != nil {
		return nil, joinErr
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	backendsJSON, _ := json.MarshalIndent(backends, "", "  ")
	certsJSON, _ := json.MarshalIndent(certHosts, "", "  ")
	files = append(files,
		txtar.File{Name: "lua/backends.json", Data: append(backendsJSON, '\n')},
		txtar.File{Name: "lua/certificate-hosts.json", Data: append(certsJSON, '\n')})
	if len(routes) > 0 {
		// The hosts routed in Lua (--lua-routing), which have no server file.
		routesJSON, _ := json.MarshalIndent(routes, "", "  ")
		files = append(files, txtar.File{Name: "lua/routes.json", Data: append(routesJSON, '\n')})
	}
	if len(passthrough) > 0 {
		// The TLS passthrough hosts' endpoints (--enable-ssl-passthrough),
		// which the applier keeps as one file per host.
		passthroughJSON, _ := json.MarshalIndent(passthrough, "", "  ")
		files = append(files, txtar.File{Name: "passthrough/endpoints.json", Data: append(passthroughJSON, '\n')})
	}
	return txtar.Format(&txtar.Archive{Files: files}), nil
}

// printable is a rendered file's content as render prints it: a file made
// from Secret data is replaced by a note of its size (password hashes can
// be cracked offline; render output ends up in tickets and CI logs).
func printable(f bus.RenderedFile) string {
	if renderer.SecretDerived(f.Path) {
		return fmt.Sprintf("<redacted: %d bytes of secret-derived content>\n", len(f.Content))
	}
	return f.Content
}
