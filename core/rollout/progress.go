package rollout

import "context"

// episodeDoneKey is the context key of WithEpisodeDone's function.
type episodeDoneKey struct{}

// WithEpisodeDone returns a copy of ctx under which a [Player] — the
// in-process [Pool], or core/cluster's Client — calls f each time an
// episode it plays under that context has finished, failed ones
// included: how a long evaluation shows its progress episode by episode
// (as net/http/httptrace hooks a request). f is called from the players'
// goroutines, concurrently, so it must be safe for concurrent use, and
// quick: the episode's worker waits for it.
func WithEpisodeDone(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, episodeDoneKey{}, f)
}

// EpisodeDoneFunc returns the function [WithEpisodeDone] put in ctx, or
// one that does nothing. A Player looks it up once per batch of episodes
// and calls it once per episode it finishes.
func EpisodeDoneFunc(ctx context.Context) func() {
	if f, ok := ctx.Value(episodeDoneKey{}).(func()); ok {
		return f
	}
	return func() {}
}
