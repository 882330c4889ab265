package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func TestSettingError(t *testing.T) {
	e := core.NewSettingError("group_size", "must be at least %d, got %d", 1, -3)
	if e.Error() != "group_size: must be at least 1, got -3" {
		t.Errorf("Error() = %q", e.Error())
	}
	if n := e.In("train"); n.Key != "train.group_size" || n.Msg != e.Msg || e.Key != "group_size" {
		t.Errorf("In: %+v (receiver %+v)", n, e)
	}
}

// TestOneWayToMakeASettingError checks the non-test code of the module:
// a *SettingError is made by NewSettingError (not a literal), and a table
// is added to its key with In, not pasted into an error's text
// (fmt.Errorf("train.%w", err) hides the table from the Key).
func TestOneWayToMakeASettingError(t *testing.T) {
	root, files := moduleGoFiles(t)
	fset := token.NewFileSet()
	for _, rel := range files {
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				name := ""
				switch typ := n.Type.(type) {
				case *ast.Ident:
					name = typ.Name
				case *ast.SelectorExpr:
					name = typ.Sel.Name
				}
				if name == "SettingError" && rel != "core/setting.go" {
					t.Errorf("%s: a SettingError literal; use core.NewSettingError", fset.Position(n.Pos()))
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING && strings.Contains(n.Value, ".%w") {
					t.Errorf("%s: %s pastes a table before an error; nest a *core.SettingError with In", fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
	}
}
