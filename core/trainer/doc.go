// Package trainer is centralized training: it trains a team's policy with
// GRPO on rollouts from a rollout.Pool, and writes the run directory
// (config.toml, metrics.jsonl, checkpoint/, policy.safetensors, and on a
// resume that changed settings changes.jsonl and config.after-N.toml).
// [OpenRunDir] makes one process the directory's only owner (rundir.go).
//
// [Trainer.Step] is one iteration, readable top to bottom: rollouts,
// score, advantages (credit.go; value.go for the critic of credit =
// "value"), update ([grpo.Optimizer.Update]), stats.
// [Config] is the agentfile's [train] table.
package trainer
