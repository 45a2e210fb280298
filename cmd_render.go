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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.manifests == "" {
		return errors.New("--manifests DIR is required")
	}
	o.logLevel = "error"
	log, err := o.logger()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "switchyard-render-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	o.stateDir = tmp
	embedded, err := startBus(&o)
	if err != nil {
		return err
	}
	defer embedded.Shutdown()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	stages := []string{bus.StageWatcher, bus.StageTranslator, bus.StageAnnotations, bus.StageRenderer}
	stagesDone := make(chan error, 1)
	go func() { stagesDone <- runStages(ctx, &o, embedded, stages, log) }()

	conn, err := embedded.Connect("switchyard-render")
	if err != nil {
		return err
	}
	defer conn.Close()
	var archive []byte
	err = bus.Follow(ctx, conn, bus.StageRenderer, func(_ context.Context, snap bus.Snapshot) error {
		// The first snapshot is the whole table.
		archive, err = renderArchive(snap.Puts)
		cancel()
		return err
	})
	<-stagesDone
	if err != nil {
		return err
	}
	if archive == nil {
		return fmt.Errorf("nothing was rendered within %s", *timeout)
	}
	_, err = os.Stdout.Write(archive)
	return err
}

func renderArchive(entries map[string][]byte) ([]byte, error) {
	var files []txtar.File
	var backends []json.RawMessage
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
