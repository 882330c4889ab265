package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
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
	root, files := moduleGoFiles(t)
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) {
			continue
		}
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
				break
			}
			seenOther = seenOther || !std
			prevLine, prevStd = fset.Position(imp.End()).Line, std
		}
	}
}
