// Package rollout plays episodes: decentralized execution. A [Pool] of
// workers, each with its own env instance, plays jobs (a task seed and a
// rollout seed) with a learned policy, an env's scripted baseline or
// random play; every agent decides from its own observation and gets its
// text from its own LLM. Finished episodes are scored by the reward
// functions into the joint reward R = Σ_k w_k·c_k. [Evaluate] compares
// policies on the same held-out seeds and [RunEpisode] plays one episode.
//
// A [Setup] says everything episodes need and holds no TOML: a Go program
// can build one around a native core.Env. Training on the results is the
// trainer package's.
package rollout
