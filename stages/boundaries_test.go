// Package stages_test checks the rules that keep stages independent: no
// stage's code imports another stage's package, and the shared packages
// under internal/ import no stage. Shared types live in bus/.
package stages_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	stagesImportPath = "switchyard.dev/switchyard/stages/"
	nginxImportPath  = "switchyard.dev/switchyard/internal/nginx"
)

func TestNoStageImportsAnotherStage(t *testing.T) {
	checked := 0
	for _, stage := range subdirs(t, ".") {
		checked += walkImports(t, stage, func(path, imp string) {
			if rest, ok := strings.CutPrefix(imp, stagesImportPath); ok && strings.Split(rest, "/")[0] != stage {
				t.Errorf("%s imports %s: stages talk over the bus only", path, imp)
			}
			// internal/nginx writes NGINX's files and runs it: the
			// applier alone touches NGINX.
			if imp == nginxImportPath && stage != "applier" {
				t.Errorf("%s imports %s: only the applier touches NGINX", path, imp)
			}
		})
	}
	if checked < 5 {
		t.Fatalf("only %d files checked; is the test in the stages folder?", checked)
	}
}

func TestNoInternalPackageImportsAStage(t *testing.T) {
	checked := walkImports(t, filepath.Join("..", "internal"), func(path, imp string) {
		if strings.HasPrefix(imp, stagesImportPath) {
			t.Errorf("%s imports %s: internal packages serve the stages, never the other way round", path, imp)
		}
	})
	if checked < 5 {
		t.Fatalf("only %d files checked; is internal/ beside the stages folder?", checked)
	}
}

// subdirs lists the directories in dir.
func subdirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

// walkImports calls check with every import of every non-test Go file
// below root and returns how many files it read.
func walkImports(t *testing.T, root string, check func(path, imp string)) int {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			check(path, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return checked
}
