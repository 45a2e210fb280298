package applier

// Tracing a configuration NGINX refuses to its source: NGINX names the file
// and line (or, for a complaint found after parsing, quotes the value), and
// the renderer's "# source" comments (bus/refusals.go) say which Ingress or
// ConfigMap key the lines come from.

import (
	"context"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/nginx"
)

var (
	// nginxComplaint is one line of NGINX's: the level, the message, and
	// where in the configuration, when it says.
	nginxComplaint = regexp.MustCompile(`\[(emerg|alert|crit|error)\] [0-9]+#[0-9]+: (.*?)(?: in (\S+):([0-9]+))?$`)
	// sourceComment is an attribution comment of the renderer.
	sourceComment = regexp.MustCompile(`^\s*# source (ingress|configmap|services) (\S+) rev=([0-9a-f]{12})\s*$`)
	anySource     = regexp.MustCompile(`^\s*# source\b`)
	// refusedComment lists a refusal a render honours (nginx.conf).
	refusedComment = regexp.MustCompile(`(?m)^# refused (ingress|configmap|services) (\S+) rev=([0-9a-f]{12})$`)
	// quotedInMessage are the values NGINX quotes in a complaint.
	quotedInMessage = regexp.MustCompile(`"([^"\s]{3,200})"`)
)

// attribute traces what `nginx -t` said about the candidate files (below
// dir, relative to the prefix) to the source of the offending lines. ok is
// false when NGINX named no line, or the line comes from no object.
func attribute(output, prefix, dir string, files map[string]string) (bus.Refusal, bool) {
	msg, file, line := complaint(output, filepath.Join(prefix, dir))
	if msg == "" {
		return bus.Refusal{}, false
	}
	msg = strings.ReplaceAll(msg, filepath.Join(prefix, dir)+"/", "")
	msg = strings.ReplaceAll(msg, prefix+"/", "")
	if file == "" || files[file] == "" {
		// Found after parsing (an unknown variable, a cipher list): the
		// line that holds the value NGINX quotes.
		file, line = findQuoted(msg, files)
	}
	if file == "" {
		return bus.Refusal{}, false
	}
	kind, name, rev, ok := sourceOf(files[file], line)
	if !ok {
		return bus.Refusal{}, false
	}
	return bus.Refusal{Kind: kind, Name: name, Rev: rev, Message: msg, File: file, Line: line}, true
}

// complaint is NGINX's first complaint: its message and, when it names
// one, the file (relative to root) and line.
func complaint(output, root string) (msg, file string, line int) {
	for _, l := range strings.Split(output, "\n") {
		m := nginxComplaint.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		msg = m[2]
		if m[3] != "" {
			if rel, err := filepath.Rel(root, m[3]); err == nil && !strings.HasPrefix(rel, "..") {
				file = filepath.ToSlash(rel)
				line, _ = strconv.Atoi(m[4])
			}
		}
		return msg, file, line
	}
	return "", "", 0
}

// findQuoted finds the first line, nginx.conf first, that is not a comment
// and holds a value the message quotes, as a string or as a variable.
func findQuoted(msg string, files map[string]string) (string, int) {
	names := slices.Sorted(maps.Keys(files))
	slices.SortStableFunc(names, func(a, b string) int {
		// nginx.conf first: the complaints that name no line are about
		// http-level settings.
		return boolRank(a != nginx.MainFile) - boolRank(b != nginx.MainFile)
	})
	for _, q := range quotedInMessage.FindAllStringSubmatch(msg, -1) {
		needles := []string{`"` + q[1] + `"`, "$" + q[1], "${" + q[1] + "}"}
		for _, name := range names {
			for i, l := range strings.Split(files[name], "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "#") {
					continue
				}
				for _, n := range needles {
					if strings.Contains(l, n) {
						return name, i + 1
					}
				}
			}
		}
	}
	return "", 0
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sourceOf reads the nearest "# source" comment before line (1-based).
func sourceOf(content string, line int) (kind, name, rev string, ok bool) {
	lines := strings.Split(content, "\n")
	for i := min(line, len(lines)) - 1; i >= 0; i-- {
		if !anySource.MatchString(lines[i]) {
			continue
		}
		m := sourceComment.FindStringSubmatch(lines[i])
		if m == nil || !bus.SourceNamePattern.MatchString(m[2]) {
			return "", "", "", false // "# source switchyard", or not ours
		}
		if (m[1] == bus.RefusedIngress || m[1] == bus.RefusedServices) && !strings.Contains(m[2], "/") {
			return "", "", "", false
		}
		return m[1], m[2], m[3], true
	}
	return "", "", "", false
}

// honoured lists the refusals a configuration says it honours, by key.
func honoured(mainConf string) map[string]string {
	out := map[string]string{}
	for _, m := range refusedComment.FindAllStringSubmatch(mainConf, -1) {
		out[bus.RefusalKey(m[1], m[2])] = m[3]
	}
	return out
}

// refused records a refusal NGINX just made and publishes the table.
func (s *Stage) refused(ctx context.Context, ref bus.Refusal, meta bus.Meta) {
	if s.refusals[ref.Key()] == ref {
		return // a retry of the same configuration: said already
	}
	s.log.Error("nginx refused the configuration of one source; rendering again without it",
		zap.String("kind", ref.Kind), zap.String("name", ref.Name), zap.String("rev", ref.Rev),
		zap.String("file", ref.File), zap.Int("line", ref.Line), zap.String("nginx", ref.Message))
	s.refusals[ref.Key()] = ref
	s.publishRefusals(ctx, meta)
}

// forgetRefusals keeps the refusals the configuration NGINX accepted still
// honours (its "# refused" lines, same revision); the others are over: the
// source changed and passed, or is gone. A held port's refusal is not
// over because `nginx -t` passes (it binds nothing): it lasts while the
// configuration still has the entry unchanged (held_ports.go).
func (s *Stage) forgetRefusals(ctx context.Context, files map[string]string, meta bus.Meta) {
	keep := honoured(files[nginx.MainFile])
	changed := false
	for key, ref := range s.refusals {
		if keep[key] != ref.Rev && !stillHeld(ref, files) {
			delete(s.refusals, key)
			changed = true
			s.log.Info("refusal over: the source is accepted or gone", zap.String("kind", ref.Kind), zap.String("name", ref.Name))
		}
	}
	if changed || !s.refusalsPublished {
		s.publishRefusals(ctx, meta)
	}
}

func (s *Stage) publishRefusals(ctx context.Context, meta bus.Meta) {
	values := map[string]any{}
	for key, ref := range s.refusals {
		values[key] = ref
	}
	start := time.Now()
	out := bus.Meta{Generation: meta.Generation, Trace: meta.Trace.Child(), Ingest: meta.Ingest}
	_, err := s.refusalWriter.Apply(ctx, out, bus.Output{Values: values, Full: true})
	// Its own span, so every traceparent on the bus is an exported span.
	bus.RecordStageSpan(ctx, bus.TableRefusals, meta, out.Trace, start, err)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("publish refusals", zap.Error(err))
		}
		return
	}
	s.refusalsPublished = true
}
