package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportGroups checks the import blocks of every Go file of the
// module the way goimports writes them: the standard library in one group,
// then the other imports, so that no group mixes the two. Generated files
// are left as their generator wrote them.
func TestImportGroups(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		checked++
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		prevLine, prevStd, seenOther := 0, false, false
		for i, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(p, "/", 2)[0], ".")
			line := fset.Position(imp.Pos()).Line
			if imp.Doc != nil {
				line = fset.Position(imp.Doc.Pos()).Line
			}
			newGroup := i == 0 || line > prevLine+1
			if (std && seenOther) || (!newGroup && std != prevStd) {
				t.Errorf("%s: import %q: the standard library's imports go in the first group, the others after a blank line (as goimports writes them)", rel, p)
				return nil
			}
			seenOther = seenOther || !std
			prevLine, prevStd = fset.Position(imp.End()).Line, std
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files; is the walk rooted at the module?", checked)
	}
}
