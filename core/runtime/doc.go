// Package runtime trains and runs teams of agents: it collects joint
// rollouts with a pool of workers (one env instance each), scores them with
// the reward functions, optimizes the policies with GRPO (centralized
// training) and evaluates them against the env's baselines, each agent
// acting from its own observation only (decentralized execution).
//
// A Setup says everything a run needs and holds no TOML: a Go program can
// build one around a native core.Env (see Example). The agentfile package
// builds a Setup from agentfile.toml.
package runtime
