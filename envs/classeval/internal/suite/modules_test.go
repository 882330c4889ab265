package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
)

func TestClassModules(t *testing.T) {
	c := &Class{
		Imports:   []string{"import numpy as np", "from collections import defaultdict"},
		Canonical: "import os.path, re as regex,\tjson\nclass A:\n    def f(self):\n        from xml.etree import ElementTree\n        from . import sibling\n        return 'import notamodule'\n",
		Test:      "import unittest\nfrom PIL import Image\n",
	}
	want := []string{"PIL", "collections", "json", "numpy", "os", "re", "unittest", "xml"}
	if got := c.Modules(); !slices.Equal(got, want) {
		t.Errorf("Modules() = %v, want %v", got, want)
	}
	// The shipped classes: ClassEval_93 imports numpy and gensim; every
	// third-party module a kept class imports has its Debian package.
	ds, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Class("ClassEval_93").Modules(); !slices.Contains(got, "numpy") || !slices.Contains(got, "gensim") {
		t.Errorf("ClassEval_93 imports %v, want numpy and gensim among them", got)
	}
	third := map[string]bool{}
	for _, c := range ds.Classes {
		for _, m := range c.Modules() {
			if !stdlib[m] {
				third[m] = true
			}
		}
	}
	for m := range third {
		if _, ok := DebianPackages[m]; !ok {
			t.Errorf("module %s, imported by a shipped class, has no Debian package in DebianPackages", m)
		}
	}
	for m := range DebianPackages {
		if !third[m] {
			t.Errorf("DebianPackages lists %s, which no shipped class imports", m)
		}
	}
}

// stdlib are the standard-library modules the shipped classes import.
var stdlib = map[string]bool{
	"collections": true, "csv": true, "datetime": true, "json": true, "logging": true, "math": true,
	"os": true, "random": true, "re": true, "socket": true, "sqlite3": true, "stat": true,
	"string": true, "sys": true, "tempfile": true, "time": true, "unittest": true, "xml": true,
}

func TestProbe(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	a, err := r.Probe(ctx, []string{"json", "troupe_no_such_module", "json"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Missing, []string{"troupe_no_such_module"}) || a.Version == "" || len(a.Fingerprint) != 64 {
		t.Fatalf("Probe = %+v, want only troupe_no_such_module missing, a version and a SHA-256", a)
	}
	b, err := r.Probe(ctx, []string{"troupe_no_such_module", "json"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint != b.Fingerprint {
		t.Errorf("the same modules in another order: fingerprint %s, then %s", a.Fingerprint, b.Fingerprint)
	}
	c, err := r.Probe(ctx, []string{"json", "unittest"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Fingerprint == a.Fingerprint || len(c.Missing) != 0 {
		t.Errorf("another module found: %+v, want another fingerprint than %s and nothing missing", c, a.Fingerprint)
	}
}

// needModules skips t (or fails it under testenv.RequireEnv) when r's
// interpreter lacks one of mods.
func needModules(t *testing.T, r *Runner, mods ...string) {
	t.Helper()
	in, err := r.Probe(context.Background(), mods)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Missing) > 0 {
		var pkgs []string
		for _, m := range in.Missing {
			pkgs = append(pkgs, DebianPackages[m])
		}
		testenv.Need(t, fmt.Errorf("%s lacks the modules %s (apt-get install %s; .ci/run does)", DefaultPython, strings.Join(in.Missing, ", "), strings.Join(pkgs, " ")))
	}
}
