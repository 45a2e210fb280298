// The manifests-directory source: a directory of YAML files that stands in
// for the Kubernetes API (local runs, GitOps checkouts, ConfigMap mounts).

package watcher

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"switchyard.dev/switchyard/internal/manifest"
)

// manifestSource watches a directory of *.yaml / *.yml files.
//
// Files are read in lexical order; when two define the same object, the
// later one wins. A file that stops parsing keeps its last good objects in
// the set until it parses again. Subdirectories, hidden files and editor
// temporary files are ignored; symlinks to files are followed, so a
// ConfigMap-mounted directory works.
type manifestSource struct {
	dir string
	log *zap.Logger

	debounce time.Duration // how long events are collected before a rescan
	resync   time.Duration // rescan period, a backstop for missed events
	retry    time.Duration // how soon to retry while the directory is missing
	maxBytes int64         // larger files are refused

	spare setPool // a set the watcher released, reused by merge
}

// newManifestSource returns a source for dir. log is used as given.
func newManifestSource(dir string, log *zap.Logger) *manifestSource {
	if log == nil {
		log = zap.NewNop()
	}
	return &manifestSource{
		dir:      filepath.Clean(dir),
		log:      log,
		debounce: 15 * time.Millisecond,
		resync:   10 * time.Second,
		retry:    250 * time.Millisecond,
		maxBytes: 16 << 20,
		spare:    newSetPool(),
	}
}

// Release hands back a set Run sent, once the receiver holds no reference
// to it: the next merge is built in its map.
func (s *manifestSource) Release(set map[string][]byte) { s.spare.put(set) }

// Run sends the complete desired object set (key → JSON) once at start and again after every change, until ctx ends.
//
// A map sent, and the bytes in it, are never written afterwards (the map
// only once the receiver hands it back with Release); the receiver must
// not write them either. A set is sent only when it differs
// from the last one delivered; if the receiver is slow, intermediate sets are
// folded into the newest. Run returns an error when the directory does not
// exist or cannot be watched, and nil when ctx ends. While the directory is
// missing (being replaced), the last set is kept. Run must not be called
// twice at once on one manifestSource.
func (s *manifestSource) Run(ctx context.Context, out chan<- objectSet) error {
	info, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("manifest directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("manifest directory %s: not a directory", s.dir)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch manifest directory %s: %w", s.dir, err)
	}
	defer w.Close()
	if err := w.Add(s.dir); err != nil {
		return fmt.Errorf("watch manifest directory %s: %w", s.dir, err)
	}

	st := &scanState{src: s, w: w, files: map[string]*manifestFile{}, watching: true}
	if st.dirInfo, err = os.Stat(s.dir); err != nil {
		return fmt.Errorf("manifest directory: %w", err)
	}
	var (
		debounceC <-chan time.Time
		retryC    <-chan time.Time
		force     = map[string]bool{}
		full      bool
	)
	if _, ok := st.scan(nil, true); !ok {
		retryC = time.After(s.retry)
	}
	// Every set merge returns is new and never written afterwards, so the
	// receiver and this loop share it.
	current, _ := st.merge()
	var (
		sent    map[string][]byte // last set delivered
		pending = current
		// since are the keys that may differ from sent, when sinceKnown
		// (objectSet.changed); a full merge makes them unknown until the
		// next delivery.
		since      []string
		sinceKnown bool
	)
	s.log.Info("watching manifest directory",
		zap.String("dir", s.dir), zap.Int("files", len(st.files)), zap.Int("objects", len(current)))

	resync := time.NewTicker(s.resync)
	defer resync.Stop()
	resyncs := 0
	schedule := func() {
		if debounceC == nil {
			debounceC = time.After(s.debounce)
		}
	}
	rescan := func(readAll bool) {
		changed, ok := st.scan(force, readAll)
		force = map[string]bool{}
		retryC = nil
		if !ok {
			retryC = time.After(s.retry)
		}
		if !changed {
			return
		}
		next, keys := st.merge()
		if keys == nil {
			since, sinceKnown = nil, false
		} else if sinceKnown {
			since = append(since, keys...)
		}
		switch {
		case sent != nil && equalOn(next, sent, since, sinceKnown):
			pending = nil // back to what the receiver already has
			since, sinceKnown = nil, true
		case pending == nil || !equalOn(next, current, keys, keys != nil):
			pending = next
		}
		current = next
	}

	for {
		var outC chan<- objectSet
		var changed []string
		if pending != nil {
			outC = out
			if sent != nil && sinceKnown {
				// Never nil: "nothing changed" is not "unknown".
				changed = since
				if changed == nil {
					changed = []string{}
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case outC <- objectSet{objects: pending, changed: changed}:
			sent = current
			pending = nil
			// The receiver holds changed now: a new slice from here on.
			since, sinceKnown = nil, true
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("manifest directory watch closed")
			}
			if filepath.Clean(ev.Name) == s.dir {
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					st.watching = false
					full = true
				}
			} else if name := filepath.Base(ev.Name); isManifestName(name) {
				force[name] = true
			}
			schedule()
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("manifest directory watch closed")
			}
			s.log.Warn("manifest directory watch error; rescanning", zap.String("dir", s.dir), zap.Error(err))
			full = true
			schedule()
		case <-debounceC:
			debounceC = nil
			readAll := full
			full = false
			rescan(readAll)
		case <-retryC:
			rescan(true)
		case <-resync.C:
			// A file whose stat changed is reread; every contentResync-th
			// rescan rereads them all, for a rewrite a coarse mtime hid.
			// Reading every file each time would be megabytes of garbage
			// every few seconds at 10,000 Ingresses.
			resyncs++
			rescan(resyncs%contentResync == 0)
		}
	}
}

// contentResync: every how many periodic rescans read every file's
// content, not only the files whose stat changed.
const contentResync = 6

// manifestFile is what the source knows of one file.
type manifestFile struct {
	info    os.FileInfo // as of the last read
	sum     [sha256.Size]byte
	objects []manifest.Object // last good parse
	err     string            // last failure, "" while the file parses
}

// scanState is the state of one Run.
type scanState struct {
	src        *manifestSource
	w          *fsnotify.Watcher
	files      map[string]*manifestFile
	dirInfo    os.FileInfo
	watching   bool
	dirMissing bool

	// set is the last merged set (never written once returned); dups
	// says a key was defined twice in it. dirty holds, for each file
	// whose objects changed since, its objects before the change.
	set   map[string][]byte
	dups  bool
	dirty map[string][]manifest.Object
}

// markDirty records a file's objects before their first change since the
// last merge.
func (st *scanState) markDirty(name string, before []manifest.Object) {
	if st.dirty == nil {
		st.dirty = map[string][]manifest.Object{}
	}
	if _, ok := st.dirty[name]; !ok {
		st.dirty[name] = before
	}
}

// scan lists the directory and rereads files that are new, changed on disk,
// named in force, or (readAll) all of them; a file is parsed again only when
// its content changed. It reports whether any file's objects changed, and ok
// false when the directory could not be read (retry soon).
func (st *scanState) scan(force map[string]bool, readAll bool) (changed, ok bool) {
	s := st.src
	info, err := os.Stat(s.dir)
	if err != nil || !info.IsDir() {
		if !st.dirMissing {
			s.log.Warn("manifest directory is missing; keeping the last object set", zap.String("dir", s.dir), zap.Error(err))
			st.dirMissing = true
		}
		st.watching = false
		return false, false
	}
	if st.dirMissing {
		s.log.Info("manifest directory is back", zap.String("dir", s.dir))
		st.dirMissing = false
	}
	if !st.watching || !os.SameFile(info, st.dirInfo) {
		// The directory was replaced: watch the new one and read it all.
		_ = st.w.Remove(s.dir) // the old watch may already be gone
		if err := st.w.Add(s.dir); err != nil {
			s.log.Warn("cannot watch manifest directory; retrying", zap.String("dir", s.dir), zap.Error(err))
			return false, false
		}
		st.watching = true
		st.dirInfo = info
		readAll = true
		s.log.Info("watching the manifest directory again", zap.String("dir", s.dir))
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.log.Warn("cannot list manifest directory; retrying", zap.String("dir", s.dir), zap.Error(err))
		return false, false
	}

	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		name := e.Name()
		path, fi, read, err := statManifest(s.dir, name)
		if err != nil {
			// Unreadable for now: keep what the file had.
			seen[name] = true
			st.failIO(name, err)
			continue
		}
		if !read {
			continue
		}
		f := st.files[name]
		if f != nil && f.info != nil && !readAll && !force[name] && sameStat(f.info, fi) {
			seen[name] = true
			continue
		}
		fileChanged, present := st.read(name, path)
		if present {
			seen[name] = true
		}
		changed = changed || fileChanged
	}
	for name, f := range st.files {
		if !seen[name] {
			changed = changed || len(f.objects) > 0
			s.log.Info("manifest file removed", zap.String("file", name), zap.Int("objects", len(f.objects)))
			st.markDirty(name, f.objects)
			delete(st.files, name)
		}
	}
	return changed, true
}

// read rereads one file. It reports whether the file's objects changed, and
// present false when the file vanished meanwhile.
func (st *scanState) read(name, path string) (changed, present bool) {
	s := st.src
	data, info, err := readLimited(path, s.maxBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false
	}
	if err != nil {
		st.failIO(name, err)
		return false, true
	}
	f := st.files[name]
	if f == nil {
		f = &manifestFile{}
		st.files[name] = f
	}
	sum := sha256.Sum256(data)
	if f.info != nil && sum == f.sum {
		f.info = info
		return false, true // same content: nothing to reparse, nothing to relog
	}
	f.info, f.sum = info, sum
	objs, skipped, err := manifest.Parse(name, data)
	if err != nil {
		// Logged once per content change: an unchanged file is not reparsed.
		f.err = err.Error()
		logParseError(s.log, name, err, len(f.objects))
		return false, true
	}
	if f.err != "" {
		s.log.Info("manifest file parses again", zap.String("file", name))
		f.err = ""
	}
	for _, sk := range skipped {
		if sk.KnownKind {
			s.log.Warn("skipping object: unsupported apiVersion for this kind",
				zap.String("source", sk.Source), zap.String("apiVersion", clip(sk.APIVersion)), zap.String("kind", clip(sk.Kind)))
		} else {
			s.log.Debug("skipping object of an unsupported kind",
				zap.String("source", sk.Source), zap.String("apiVersion", clip(sk.APIVersion)), zap.String("kind", clip(sk.Kind)))
		}
	}
	if equalObjects(f.objects, objs) {
		return false, true
	}
	st.markDirty(name, f.objects)
	f.objects = objs
	return true, true
}

// logParseError logs each document of a file that does not parse, naming
// the object and the field. The mistake is in the user's file, not in
// Switchyard: no stack trace.
func logParseError(log *zap.Logger, file string, err error, kept int) {
	log = log.WithOptions(zap.AddStacktrace(zapcore.FatalLevel))
	docs := manifest.DocumentErrors(err)
	if len(docs) == 0 {
		log.Error("manifest file does not parse; keeping its last good objects",
			zap.String("file", file), zap.Error(err), zap.Int("kept_objects", kept))
		return
	}
	for _, d := range docs {
		fields := []zap.Field{zap.String("file", file), zap.Int("line", d.Line), zap.Error(d), zap.Int("kept_objects", kept)}
		if d.Kind != "" {
			fields = append(fields, zap.String("kind", d.Kind))
		}
		if d.Name != "" {
			fields = append(fields, zap.String("object", path.Join(d.Namespace, d.Name)))
		}
		if d.Field != "" {
			fields = append(fields, zap.String("field", d.Field))
		}
		log.Error("manifest file does not parse; keeping its last good objects", fields...)
	}
}

// failIO records that a file could not be read, logging each distinct error
// once. The file keeps its last good objects.
func (st *scanState) failIO(name string, err error) {
	f := st.files[name]
	if f == nil {
		f = &manifestFile{}
		st.files[name] = f
	}
	f.info = nil // read again next time
	if f.err == err.Error() {
		return
	}
	f.err = err.Error()
	st.src.log.Error("cannot read manifest file; keeping its last good objects",
		zap.String("file", name), zap.Error(err), zap.Int("kept_objects", len(f.objects)))
}

// merge assembles the desired set from every file in lexical order, later
// definitions winning, and warns about each overridden one. It runs on
// every change: from the last set and the changed files when it can
// (mergeChanged), else over every object (mergeAll). Either way each
// object's bytes are shared with the file's parse (never written after),
// since at 10,000 Ingresses copies would be most of what a change costs,
// in garbage collection.
//
// changed are the keys whose values may differ from the last set merge
// returned (repeats allowed), or nil after mergeAll, which cannot say.
func (st *scanState) merge() (set map[string][]byte, changed []string) {
	dirty := st.dirty
	st.dirty = nil
	if st.set != nil && !st.dups {
		if next, ok := st.mergeChanged(dirty); ok {
			st.set = next
			return next, dirtyKeys(dirty, st.files)
		}
	}
	st.set, st.dups = st.mergeAll()
	return st.set, nil
}

// dirtyKeys are the keys the dirty files defined before (dirty's values)
// and define now: every key whose value a merge from them can change.
func dirtyKeys(dirty map[string][]manifest.Object, files map[string]*manifestFile) []string {
	keys := []string{}
	for name, old := range dirty {
		for _, o := range old {
			keys = append(keys, o.Key)
		}
		if f := files[name]; f != nil {
			for _, o := range f.objects {
				keys = append(keys, o.Key)
			}
		}
	}
	return keys
}

// mergeChanged is merge from the last set and the files that changed
// since: a copy of the set (cheap next to inserting every key again) with
// their old objects taken out and their new ones put in. It holds only
// while every key is defined once; ok is false when a changed file
// defines a key another file or document does, and mergeAll decides.
func (st *scanState) mergeChanged(dirty map[string][]manifest.Object) (set map[string][]byte, ok bool) {
	set = st.src.spare.get(len(st.set))
	maps.Copy(set, st.set)
	before := map[string]bool{}
	for _, old := range dirty {
		for _, o := range old {
			delete(set, o.Key)
			before[o.Key] = true
		}
	}
	for name := range dirty {
		f := st.files[name]
		if f == nil {
			continue // removed
		}
		for _, o := range f.objects {
			_, inLast := st.set[o.Key]
			_, taken := set[o.Key]
			if taken || (inLast && !before[o.Key]) {
				st.src.spare.put(set)
				return nil, false
			}
			set[o.Key] = o.JSON
		}
	}
	return set, true
}

// mergeAll assembles the set from every file; dups says a key was defined
// twice.
func (st *scanState) mergeAll() (set map[string][]byte, dups bool) {
	names := slices.Sorted(maps.Keys(st.files))
	total := 0
	for _, name := range names {
		total += len(st.files[name].objects)
	}
	set = st.src.spare.get(total)
	// from says where each key was defined; it is built only once a key
	// turns out to be defined twice, which is rare.
	var from map[string]string
	for i, name := range names {
		for j, o := range st.files[name].objects {
			if _, dup := set[o.Key]; dup {
				dups = true
				if from == nil {
					from = st.definitions(names[:i], st.files[name].objects[:j])
				}
				st.src.log.Warn("object defined twice; the later definition wins",
					zap.String("key", o.Key), zap.String("source", o.Source), zap.String("overrides", from[o.Key]))
			}
			set[o.Key] = o.JSON
			if from != nil {
				from[o.Key] = o.Source
			}
		}
	}
	return set, dups
}

// definitions maps each key the given files, then the given objects,
// define to the source of its last definition.
func (st *scanState) definitions(names []string, more []manifest.Object) map[string]string {
	from := map[string]string{}
	for _, name := range names {
		for _, o := range st.files[name].objects {
			from[o.Key] = o.Source
		}
	}
	for _, o := range more {
		from[o.Key] = o.Source
	}
	return from
}

func readLimited(path string, limit int64) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > limit {
		return nil, nil, fmt.Errorf("%s: file is larger than %d bytes", filepath.Base(path), limit)
	}
	return data, info, nil
}

// statManifest says whether the directory entry name of dir is a file the
// source reads (read): a manifest name that, symlinks followed, exists
// and is a regular file. A gone file or a dangling symlink is not read; a
// stat that fails otherwise is err, for the caller to report.
func statManifest(dir, name string) (path string, info os.FileInfo, read bool, err error) {
	if !isManifestName(name) {
		return "", nil, false, nil
	}
	path = filepath.Join(dir, name)
	info, err = os.Stat(path) // follows symlinks
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return path, nil, false, nil
	case err != nil:
		return path, nil, false, err
	}
	return path, info, info.Mode().IsRegular(), nil
}

// isManifestName tells the files the source reads: *.yaml and *.yml, not
// hidden, not an editor's temporary file.
func isManifestName(name string) bool {
	if name == "" || name[0] == '.' || name[0] == '#' {
		return false
	}
	for _, suffix := range []string{"~", ".swp", ".swo", ".swx", ".tmp", ".bak"} {
		if strings.HasSuffix(name, suffix) {
			return false
		}
	}
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

func sameStat(a, b os.FileInfo) bool {
	return a != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func equalObjects(a, b []manifest.Object) bool {
	return slices.EqualFunc(a, b, func(x, y manifest.Object) bool {
		return x.Key == y.Key && x.Source == y.Source && bytes.Equal(x.JSON, y.JSON)
	})
}

// equalOn says whether a and b hold the same values: comparing only keys
// when known (every other key holds the same bytes in both), else all.
func equalOn(a, b map[string][]byte, keys []string, known bool) bool {
	if !known {
		return equalSets(a, b)
	}
	for _, key := range keys {
		x, inA := a[key]
		y, inB := b[key]
		if inA != inB || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

func equalSets(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// clip bounds a document string put into a log line.
func clip(s string) string {
	const n = 100
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ManifestErrors reads dir once as the manifests source does (the same
// files, the same size limit) and returns every document that does not
// parse, and every file that cannot be read (Line 0), for switchyard check:
// the source itself only logs them, and run leaves such a file's objects
// out.
func ManifestErrors(dir string) ([]*manifest.DocumentError, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest directory: %w", err)
	}
	limit := newManifestSource(dir, nil).maxBytes
	var out []*manifest.DocumentError
	for _, e := range entries {
		name := e.Name()
		path, _, read, err := statManifest(dir, name)
		if err == nil && !read {
			continue
		}
		var data []byte
		if err == nil {
			data, _, err = readLimited(path, limit)
		}
		if err != nil {
			out = append(out, &manifest.DocumentError{File: name, Message: "cannot read the file: " + err.Error()})
			continue
		}
		if _, _, err := manifest.Parse(name, data); err != nil {
			docs := manifest.DocumentErrors(err)
			if len(docs) == 0 {
				docs = []*manifest.DocumentError{{File: name, Message: err.Error()}}
			}
			out = append(out, docs...)
		}
	}
	return out, nil
}
