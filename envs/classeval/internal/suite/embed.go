package suite

import (
	"embed"
	"sync"
)

//go:embed data/ClassEval_data.json.gz data/outputs/*.json.gz data/timings.json data/exclusions.json
var dataFS embed.FS

var embedded struct {
	once sync.Once
	ds   *Dataset
	out  *Outputs
	err  error
}

func loadEmbedded() {
	e := &embedded
	b, err := dataFS.ReadFile("data/ClassEval_data.json.gz")
	if err != nil {
		e.err = err
		return
	}
	if e.ds, e.err = ParseDataset("embedded:ClassEval_data.json.gz", b); e.err != nil {
		return
	}
	e.out, e.err = loadOutputs(dataFS, "data/outputs", "embedded:outputs", e.ds)
}

// Embedded returns the shipped dataset: the 75 ClassEval classes of
// data/README.md. It is parsed once; callers must not modify it.
func Embedded() (*Dataset, error) {
	embedded.once.Do(loadEmbedded)
	return embedded.ds, embedded.err
}

// EmbeddedOutputs returns the shipped completions of the embedded
// dataset's classes, extracted (once; callers must not modify them).
func EmbeddedOutputs() (*Outputs, error) {
	embedded.once.Do(loadEmbedded)
	return embedded.out, embedded.err
}
