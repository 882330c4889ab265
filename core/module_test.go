package core_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// moduleGoFiles returns the module's root and its Go files, relative to
// the root with slashes, leaving out hidden directories and testdata: what
// the tests that check rules over the whole tree read.
func moduleGoFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
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
		if strings.HasSuffix(path, ".go") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d Go files; is the walk rooted at the module?", len(files))
	}
	return root, files
}
