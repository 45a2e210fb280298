// Package stages_test checks the rule that keeps stages independent: no
// stage's code imports another stage's package. Shared types live in bus/.
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

const stagesImportPath = "switchyard.dev/switchyard/stages/"

func TestNoStageImportsAnotherStage(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, stage := range entries {
		if !stage.IsDir() {
			continue
		}
		err := filepath.WalkDir(stage.Name(), func(path string, d os.DirEntry, err error) error {
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
				if rest, ok := strings.CutPrefix(p, stagesImportPath); ok && strings.Split(rest, "/")[0] != stage.Name() {
					t.Errorf("%s imports %s: stages talk over the bus only", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 5 {
		t.Fatalf("only %d files checked; is the test in the stages folder?", checked)
	}
}
