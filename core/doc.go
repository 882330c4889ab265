// Package core is troupe's public Dec-POMDP API: the spaces, specs,
// observations, actions and episodes that environments, reward functions,
// LLM backends and the runtime exchange.
//
// A collaborative task is an [Env]: each agent sees only its own
// [Observation] (a feature vector for its policy, a text context for its LLM
// and a mask of legal decisions) and picks a decision; decisions that need
// content get text from the agent's [LLM]. The environment steps on the joint
// [Action] with PettingZoo-parallel semantics, and [RewardFunc]s score the
// finished [Episode] into named components that the joint reward weighs.
//
// The contract between an env and the runtime is explicit: the [EnvSpec]
// says everything the runtime needs to know, including the optional
// interfaces the env offers ([Capabilities]) and the baseline its
// reference metrics describe; the well-known metric and artifact names
// (such as [MetricMakespan] and [ArtifactDocument]) are declared here,
// where envs, reward functions and the runtime all see them. The package
// core/envtest checks that an env keeps the contract.
//
// core imports none of troupe's other top-level packages; the runtime
// that plays episodes lives in core/rollout, the one that trains policies
// with GRPO in core/trainer, and built-in tasks in envs/.
package core
