package cluster

import (
	"context"
	"time"

	"github.com/troupe-dev/troupe/core/rollout"
)

// SetAfterWrite sets the hook called after a worker writes a result;
// returning false skips the ack, as a worker killed there would.
func SetAfterWrite(w *Worker, f func(Job) bool) { w.afterWrite = f }

// SetBeforeWrite sets the hook called before a worker writes a result;
// returning false drops the job there (no result, no ack).
func SetBeforeWrite(w *Worker, f func(Job) bool) { w.beforeWrite = f }

// SetOnPlay sets the hook called with the context each episode is played
// in.
func SetOnPlay(w *Worker, f func(context.Context, Job)) { w.onPlay = f }

// Paused records an episode's outcome for w's rate-limit pause and
// returns the pause.
func Paused(w *Worker, limited bool, base time.Duration) time.Duration {
	return w.paused(limited, base)
}

// EncodeResult is the stored form of the result of job j.
func EncodeResult(j Job, res rollout.EpisodeResult) ([]byte, error) { return encodeResult(j, res) }
