package grpo

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocLinks checks that every link of docs/grpo.md of the form
// [`name`](../path.go#Lnn) points at a line that contains name (or, for
// a method, its last part), so the implementation-details page cannot
// drift from the code.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "grpo.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile("\\[`([^`]+)`\\]\\(\\.\\./([^)#]+)#L(\\d+)\\)").FindAllStringSubmatch(string(doc), -1)
	if len(links) < 15 {
		t.Fatalf("found %d links in docs/grpo.md, want the table's", len(links))
	}
	for _, l := range links {
		name, file := l[1], l[2]
		line, _ := strconv.Atoi(l[3])
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Errorf("link to %s: %v", file, err)
			continue
		}
		lines := strings.Split(string(src), "\n")
		if line < 1 || line > len(lines) {
			t.Errorf("%s#L%d: the file has %d lines", file, line, len(lines))
			continue
		}
		want := name[strings.LastIndex(name, ".")+1:]
		if !strings.Contains(lines[line-1], want) {
			t.Errorf("%s#L%d is %q; the link names %s", file, line, strings.TrimSpace(lines[line-1]), name)
		}
	}
}
