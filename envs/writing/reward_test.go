package writing

import (
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/rewards"
)

// consistencyOf scores a document with the "writing.consistency" reward,
// as the runtime scores an episode's artifact, and returns the reward's
// metrics: "consistency" (the score), "consistency.coverage" and
// "consistency.<check>" per check. The env itself judges no document; its
// tests measure what its writers produce with the reward that scores them.
func consistencyOf(t testing.TB, doc []byte) map[string]float64 {
	t.Helper()
	r, err := rewards.NewWritingConsistency(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := r.Score(&core.Episode{Artifacts: map[string][]byte{core.ArtifactDocument: doc}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
